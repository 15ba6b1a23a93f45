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
from .written import plain_functions, plain_steps

# What counts by content: plain data. An object, a client or a lock keeps
# counting by its statements, as in the fingerprint (else never cached).
_PLAIN = (list, dict, set, frozenset, tuple, bytearray, collections.deque, str, bytes, int, float)


def state_values(fn: Any) -> list[tuple[str, Any]]:
    """(name, value) of each such global `fn` (under partials, bindings and
    the step) reads that holds plain data now, itself or through a function
    of the user's it runs (`written.plain_functions`: `helper(k)` reading
    `STATE`, a step it calls); [] for none (the common case: a lookup by
    its code, and one by the function)."""
    target = fn if type(fn) is types.FunctionType else unbound(fn)
    found: list[tuple[str, Any]] = []
    seen: set[tuple[int, str]] = set()  # one global read by the step and a helper: once
    for reader in (target, *plain_functions(target)):
        names = state_read(reader)
        values = getattr(reader, "__globals__", {}) if names else {}
        for n in names:
            if isinstance(values.get(n), _PLAIN) and (id(values), n) not in seen:
                seen.add((id(values), n))
                found.append((n, values[n]))
    return found


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
    target = fn if type(fn) is types.FunctionType else unbound(fn)
    names = state_written(target)  # and those of the steps it runs plainly (`put(k, v)` in it)
    for inner in plain_steps(target):
        names += tuple(n for n in state_written(inner) if n not in names)
    return names
