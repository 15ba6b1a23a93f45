"""The module-level values a cached step reads that the program changes as
it runs (`STATE.get(k)` where another step does `STATE[k] = v`, `RATE`
that a step rebinds with `global`): they join its cache key by content
(`cachekey.with_state`). Its fingerprint counts a global by the statements
binding it (`STATE = {}`), the same whatever a step put there since, so a
cached `get("a")` was served the output computed from another run's
`STATE`. And those a cached step writes that another step reads, which
keep it out of the cache (`state_writes`)."""

from __future__ import annotations

import collections
import types
from typing import Any

from .._fingerprint.stepstate import state_read, state_written
from .bound import unbound

# What counts by content: plain data. An object, a client or a lock keeps
# counting by its statements, as in the fingerprint (else never cached).
_PLAIN = (list, dict, set, frozenset, tuple, bytearray, collections.deque, str, bytes, int, float)


def state_values(fn: Any) -> list[tuple[str, Any]]:
    """(name, value) of each such global `fn` (under partials, bindings and
    the step) reads that holds plain data now; [] for none (the common
    case: a dict lookup by its code)."""
    target = fn if type(fn) is types.FunctionType else unbound(fn)
    names = state_read(target)
    if not names:
        return []
    values = getattr(target, "__globals__", {})
    return [(n, values[n]) for n in names if isinstance(values.get(n), _PLAIN)]


def state_writes(fn: Any) -> tuple[str, ...]:
    """The module-level values `fn` (under partials, bindings and the step)
    writes that another step or workflow of its module reads (`STATE[k] =
    v` in `put`, `STATE.get(k)` in `get`: `stepstate.state_written`, as a
    run's record counts them). A cache hit returns the output but cannot
    redo the write, so the reader would go on with the state as the import
    or another call left it: such a step is not cached (`cache.ticket_for`).
    Not a count or a log it keeps (`CALLS["put"] += 1`, `LOG.append(x)`):
    a hit does not bump it, as joblib's does not (how the peers' suites
    count calls, even where another step reads the count)."""
    return state_written(fn if type(fn) is types.FunctionType else unbound(fn))
