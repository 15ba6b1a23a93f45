"""A fail-closed memo of fingerprints: a step or workflow fingerprinted
again (at a run's start, for each cached plain call) reuses its last
fingerprint while nothing it was computed from changed.

What it was computed from is witnessed as it is read (see `witness`): the
function's `__code__`, wrapper chain, defaults and closure cells, every
global, module attribute and class member its code (and its helpers' code,
recursively) names, the contents of a list, dict or set found that way, the
source files and notebook cells read (by stat, or by linecache entry),
imports in the body, and the fingerprints of the steps it reaches. Checking
them is a few identity tests and a `stat` per file; any difference, or any
error while checking, computes the fingerprint afresh. A fingerprint that
cannot be computed (source edited after import) is never memoised: the
error is raised again on every call."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import Any

from .fingerprint import Fingerprint, fingerprint_function
from .memorule import Memo
from .passes import one_pass
from .witness import Witness, forward

_MEMO: Memo[Fingerprint] = Memo()


def memo_fingerprint(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    version: str | None = None,
    deep: bool = True,
    steps: bool = True,
    files: bool = True,
) -> Fingerprint:
    """`fingerprint_function(fn, ...)`, reused while its witness holds
    (without `files`: whatever the source files say now, `Witness.holds`)."""
    key = memo_key(fn, name, version, deep, steps)
    found = _PASS.get()
    if found is None:
        hit = memo_alone(fn, key, files)
        if hit is not None:
            return hit
    else:
        seen = found.get(key)
        if seen is not None and seen[0] is fn:
            forward(seen[2])  # what it was computed from counts for the asker too
            return seen[1]
    token = _PASS.set({}) if found is None else None
    try:
        with one_pass():
            value = _MEMO.peek(key, fn, files=files) or _MEMO.compute(
                key,
                fn,
                lambda: fingerprint_function(fn, name=name, version=version, deep=deep, steps=steps),
            )
        entry = _MEMO.entry(key)
        if entry is not None and entry[1] is value:
            _PASS.get()[key] = (fn, value, entry[2])  # type: ignore[index]
        return value
    finally:
        if token is not None:
            _PASS.reset(token)


def memo_key(
    fn: object, name: str | None, version: str | None, deep: bool, steps: bool = True
) -> Hashable:
    """The key `fn`'s fingerprint is memoised under."""
    return (id(fn), name, version, deep, steps)


def memo_alone(fn: object, key: Hashable, files: bool) -> Fingerprint | None:
    """The memoised fingerprint of a step that reaches no other step (no
    witness was forwarded into its own) while it holds, looked up without
    making a pass: a cached plain call asks for its step's fingerprint on
    every call, and nearly always hits. A step reaching others is left to
    the pass (checking what they were computed from asks for theirs, which
    one pass must answer), as is a lookup inside a pass."""
    hit = _MEMO._entries.get(key)
    if hit is None or hit[0] is not fn or _PASS.get() is not None:
        return None
    if not hit[2].holds_alone(files):
        return None
    forward(hit[2])
    return hit[1]


# The fingerprints one outermost fingerprinting found (a step's, with the
# steps it reaches, which may reach each other): asked for again within it,
# the one found is given, its witness forwarded to the asker. Each path
# through a cycle was walked anew before: ten steps reaching each other
# through a registry (`STEPS[name](x)`) took minutes, six took 3 s.
_PASS: ContextVar[dict[Hashable, tuple[object, Fingerprint, Witness]] | None] = ContextVar(
    "durable_fingerprint_pass", default=None
)


def memo_witness(key: Hashable, value: str) -> Witness | None:
    """What the fingerprint `value` memoised for key (the latest or one
    of those recomputed since) was computed from, if it is still kept."""
    return next((w for _, fp, w in _MEMO.earlier(key) if fp.value == value), None)
