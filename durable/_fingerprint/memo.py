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

from collections.abc import Callable
from typing import Any

from .fingerprint import Fingerprint, fingerprint_function
from .witness import Witness, recording

_Key = tuple[int, str | None, str | None, bool, bool]
# key -> (the function, its fingerprint, what it was computed from). The
# function is held so that its id cannot be reused while the entry exists.
_MEMO: dict[_Key, tuple[Callable[..., Any], Fingerprint, Witness]] = {}
_SIZE = 1024


def memo_fingerprint(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    version: str | None = None,
    deep: bool = True,
    steps: bool = True,
) -> Fingerprint:
    """`fingerprint_function(fn, ...)`, reused while its witness holds."""
    key = (id(fn), name, version, deep, steps)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is fn and hit[2].holds():
        return hit[1]
    with recording(Witness()) as witness:
        fp = fingerprint_function(fn, name=name, version=version, deep=deep, steps=steps)
    if len(_MEMO) >= _SIZE:  # functions redefined again and again (a notebook)
        _MEMO.clear()
    _MEMO[key] = (fn, fp, witness)
    return fp
