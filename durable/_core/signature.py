"""A workflow function's signature, for every call (binding the call,
checking resume overrides, merging arguments): `inspect.signature` costs
more than a completed run's whole re-call should, so it is memoised by the
one memo rule (`_fingerprint.memo.Memo`), reused while everything it is
made of is the same objects (`signature_inputs`). Only plain functions
that wrap nothing are memoised: for anything else (a callable object, a
partial, a `functools.wraps` wrapper, whose signature is another
function's) it is computed afresh."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from .._fingerprint.memo import Memo
from .._fingerprint.witness import witnessed

_SIGNATURES: Memo[inspect.Signature] = Memo()


def signature_of(fn: Callable[..., Any]) -> inspect.Signature:
    """`inspect.signature(fn)`, reused while `signature_inputs(fn)` holds."""
    if type(fn) is not types.FunctionType or "__wrapped__" in fn.__dict__:
        return inspect.signature(fn)
    return _SIGNATURES.get(id(fn), fn, lambda: _signature(fn))


def _signature(fn: types.FunctionType) -> inspect.Signature:
    witnessed(signature_inputs, fn)  # before: a change meanwhile is a change
    return inspect.signature(fn)


def signature_inputs(fn: types.FunctionType) -> tuple[Any, ...]:
    """What `inspect.signature` reads of a plain function: its code (the
    parameters), defaults, keyword-only defaults and annotations (dicts,
    changed in place too, so copied) and its attributes (`__signature__`,
    `__wrapped__`, `_partialmethod` take precedence when set)."""
    held = (fn.__kwdefaults__, fn.__annotations__, fn.__dict__)
    return (fn.__code__, fn.__defaults__, *map(_copy, held))


def _copy(held: dict[str, Any] | None) -> dict[str, Any] | None:
    # None when empty: the same each call, so the check is identity tests
    # alone (an empty dict filled in place later is then a change).
    return dict(held) if held else None
