"""A workflow function's signature, for every call (binding the call,
checking resume overrides, merging arguments): `inspect.signature` costs
more than a completed run's whole re-call should, so it is memoised by the
one memo rule (`_fingerprint.memorule.Memo`), reused while everything it is
made of is the same objects (`signature_inputs`). Only plain functions
that wrap nothing are memoised: for anything else (a callable object, a
partial, a `functools.wraps` wrapper, whose signature is another
function's) it is computed afresh."""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from .._fingerprint.memorule import Memo
from .._fingerprint.witness import witnessed

_SIGNATURES: Memo[inspect.Signature] = Memo()


def signature_of(fn: Callable[..., Any]) -> inspect.Signature:
    """`call_signature(fn)`, reused while `signature_inputs(fn)` holds."""
    if type(fn) is not types.FunctionType or "__wrapped__" in fn.__dict__:
        return call_signature(fn)
    return _SIGNATURES.get(id(fn), fn, lambda: _signature(fn))


def call_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """The signature a call of fn is bound by, for its identity.
    `inspect.signature` follows `functools.wraps` to the wrapped function;
    so does this, but only past wrappers that hand their arguments on as
    they got them (`_passes_on`): the function called is the outermost
    wrapper, and one with parameters of its own (swapped, renamed, added)
    receives the call by those. Bound by the wrapped function's instead,
    two calls the wrapper tells apart (`minus(1, 2)`, `minus(a=1, b=2)`
    under a wrapper taking `(b, a)`) would be one call, and a call it
    accepts (`scale=3`) refused. A partial keeps inspect's reading."""
    if isinstance(fn, types.MethodType):  # bound: its function's, without the first
        sig = call_signature(fn.__func__)
        params = list(sig.parameters.values())
        if params and params[0].kind in _POSITIONAL:
            return sig.replace(parameters=params[1:])
        return sig
    if isinstance(fn, functools.partial):
        return inspect.signature(fn)
    inner: Any = fn
    own = inspect.signature(fn, follow_wrapped=False)
    forwarded = False
    while "__signature__" not in getattr(inner, "__dict__", {}):
        wrapped = getattr(inner, "__wrapped__", None)
        try:
            theirs = None if wrapped is None else inspect.signature(wrapped, follow_wrapped=False)
        except (TypeError, ValueError):  # nothing to compare with: the wrapper's own stands
            break
        if theirs is None or not _passes_on(own, theirs, wrapped):
            break
        forwarded = forwarded or own.parameters != theirs.parameters
        inner, own = wrapped, theirs
    if forwarded:
        return Forwarded(list(own.parameters.values()), return_annotation=own.return_annotation)
    return own


class Forwarded(inspect.Signature):
    """The signature of a function a wrapper hands `*args, **kwargs` on to:
    a step's call binds by it, but what the call leaves out the wrapper may fill
    (`kwargs.setdefault("scale", 2)`), not this signature's default. So its
    calls are digested without defaults (`fill_defaults`): `f(3)` and
    `f(3, scale=1)` are two calls, never one's output returned for the other."""

    __slots__ = ()


def fill_defaults(bound: inspect.BoundArguments) -> None:
    """Apply the defaults a call's identity counts (DESIGN §2): the
    signature's own, none through a `Forwarded` one (fail closed)."""
    if not isinstance(bound.signature, Forwarded):
        bound.apply_defaults()


def call_arguments(bound: inspect.BoundArguments) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """How a workflow's body is called with its bound arguments. Through a
    `Forwarded` signature a parameter with a default goes by keyword, as
    a caller gives it: given positionally, a wrapper filling it by keyword
    (`kwargs.setdefault("scale", 2)`) would fail ("multiple values")."""
    sig = bound.signature
    if not isinstance(sig, Forwarded) or any(
        p.kind is p.VAR_POSITIONAL and bound.arguments.get(p.name) for p in sig.parameters.values()
    ):
        return bound.args, bound.kwargs
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.name not in bound.arguments:
            continue
        value = bound.arguments[p.name]
        if p.kind is p.VAR_KEYWORD:
            kwargs.update(value)
        elif p.kind is p.POSITIONAL_ONLY or (
            p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty and not kwargs
        ):
            args.append(value)
        elif p.kind is not p.VAR_POSITIONAL:
            kwargs[p.name] = value
    return tuple(args), kwargs


def _passes_on(own: inspect.Signature, theirs: inspect.Signature, wrapped: Any) -> bool:
    """Whether a wrapper takes the call as the function it wraps does: the
    same parameters, or some of its first positional ones (`self`) then
    `*args, **kwargs` (forwarded, as decorators do) to a function whose
    first parameters (through any wrappers of its own) are those."""
    mine = list(own.parameters.values())
    if mine == list(theirs.parameters.values()):
        return True
    kinds = [p.kind for p in mine[-2:]]
    if kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return False
    lead = mine[:-2]
    if not lead:
        return True
    if any(p.default is not p.empty or p.kind not in _POSITIONAL for p in lead):
        return False
    first = list(inspect.signature(wrapped).parameters)[: len(lead)]
    return [p.name for p in lead] == first


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


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
