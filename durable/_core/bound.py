"""What a step's callable binds besides the arguments of its call: the
arguments a `functools.partial` binds and the instance a bound method
carries. They are arguments of every call (`obj.method(x)` is
`type(obj).method(obj, x)`), so they count as arguments do, by content: in
a step's record, a `loop_over` block and a cache key alike. The
fingerprint counts a list or an object there by its type only (program
state), which alone would replay, or serve from the cache, the output
computed for an instance whose state has changed since."""

from __future__ import annotations

import functools
import types
from typing import Any

from .identity import is_token, value_digest


def binds(fn: object) -> bool:
    """Whether `fn` binds anything (decided once, at decoration)."""
    return isinstance(fn, (functools.partial, types.MethodType))


def bound_values(fn: object) -> list[Any]:
    """The arguments each partial binds (of each partial, when one wraps
    another; keywords in name order), then the `self` of a bound method;
    empty for another callable."""
    bound: list[Any] = []
    while isinstance(fn, functools.partial):
        bound.append((fn.args, sorted(fn.keywords.items(), key=lambda pair: pair[0])))
        fn = fn.func
    if isinstance(fn, types.MethodType):
        bound.append(((fn.__self__,), []))
    return bound


def unbound(fn: Any) -> Any:
    """The function under the partials and the method binding."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn.__func__ if isinstance(fn, types.MethodType) else fn


def with_bound(fn: object, digest: str) -> str:
    """A call's digest joined with what `fn` binds. A call without a digest
    stays without one; a bound value without one makes a fresh token (the
    call looks changed: fail closed)."""
    if is_token(digest):
        return digest
    return value_digest((digest, bound_values(fn)))
