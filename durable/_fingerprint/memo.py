"""A fail-closed memo of fingerprints: a step or workflow fingerprinted
again (at a run's start, for each cached plain call) reuses its last
fingerprint while nothing it was computed from changed.

What it was computed from is witnessed as it is read (see `witness`): the
function's `__code__`, wrapper chain, defaults and closure cells, every
global, module attribute and class member its code (and its helpers' code,
recursively) names, the contents of a list, dict or set found that way, the
source files and notebook cells read (by stat, or by linecache entry),
imports in the body, and (for a whole fingerprint) what each step it
reaches, at any depth, was computed from (`stepgraph`). Checking
them is a few identity tests and a `stat` per file; any difference, or any
error while checking, computes the fingerprint afresh. A fingerprint that
cannot be computed (source edited after import) is never memoised: the
error is raised again on every call."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .fingerprint import Fingerprint, fingerprint_function
from .memorule import Memo
from .passes import one_pass
from .stepgraph import Node, graph_fingerprint
from .witness import Witness

# A function's own fingerprint (without its steps) and its whole one, each
# kept: twice the entries of a memo of whole ones alone.
_MEMO: Memo[Fingerprint] = Memo(2048)


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
    (without `files`: whatever the source files say now, `Witness.holds`).
    With `steps`, the steps it reaches are stamped by `stepgraph`, one
    function of the code whichever step was asked for first."""
    node: Node = (fn, name, version, deep)
    if not steps:
        return _own(node, files)
    key = memo_key(fn, name, version, deep)
    hit = _MEMO.peek(key, fn, files=files)
    if hit is not None:
        return hit
    with one_pass():
        return _MEMO.compute(key, fn, lambda: graph_fingerprint(node, _own_key, lambda n: _own(n, files)))


def _own_key(node: Node) -> Hashable:
    return memo_key(*node, steps=False)


def _own(node: Node, files: bool) -> Fingerprint:
    """A function's fingerprint without the steps it reaches (listed)."""
    fn, name, version, deep = node
    key = _own_key(node)
    hit = _MEMO.peek(key, fn, files=files)
    if hit is not None:
        return hit
    with one_pass():
        return _MEMO.compute(
            key, fn, lambda: fingerprint_function(fn, name=name, version=version, deep=deep, steps=False)
        )


def memo_key(
    fn: object, name: str | None, version: str | None, deep: bool, steps: bool = True
) -> Hashable:
    """The key `fn`'s fingerprint is memoised under."""
    return (id(fn), name, version, deep, steps)


def memo_witness(key: Hashable, value: str) -> Witness | None:
    """What the fingerprint `value` memoised for key (the latest or one
    of those recomputed since) was computed from, if it is still kept."""
    return next((w for _, fp, w in _MEMO.earlier(key) if fp.value == value), None)
