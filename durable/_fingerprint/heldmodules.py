"""Modules a function holds rather than names: in a closure cell (`def
make(settings): @step def s(x): return x * settings.THRESHOLD`), as a
default (`def s(x, settings=settings)`) or as an argument a
`functools.partial` binds. What the code reads through such a name
(`settings.THRESHOLD`, `settings` passed on whole) counts by the rule of
`reads` for a module imported at module level, by the same code
(`_resolve`, `_count`): counted as `module:settings` alone, a value
`main()` set at run time (`settings.THRESHOLD = 2`) was answered with the
output the old one gave.

Pure standard library."""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from .analysis import Analysis
from .canon import chains_of
from .imports import user_class
from .ownpath import path_tokens
from .reach import _MISSING, _cell_value, class_member
from .reads import _count, _rebound, _resolve, _Scope
from .values import _enum_tokens, plain_tokens
from .witness import witnessed

_SELF = "__self__"  # a bound method's instance, in `bound`


def read_held_modules(
    fn: Any, nodes: list[ast.AST], code: types.CodeType, out: Analysis, bound: Mapping[str, object]
) -> None:
    """Count the chains of `nodes` that start at a name holding a module
    or a class of the user's (`held_modules`), or at an object whose
    attribute holds one (`self.cfg.THRESHOLD`, `H.cfg.THRESHOLD`: `owners`);
    `bound`: what a partial passes, or a bound method's `self`, by name."""
    held = held_modules(fn, code, bound)
    owners = _owners(fn, code, bound)
    globs: Mapping[str, Any] = getattr(fn, "__globals__", {})
    module = _Scope(globs, True, code.co_filename)
    done: set[tuple[str, ...]] = set()
    for chain in chains_of(tuple(nodes)):
        owner = owners.get(chain[0], _MISSING)
        if owner is _MISSING and len(chain) > 2 and chain[0] in code.co_names:
            owner = witnessed(globs.get, chain[0], _MISSING)  # `H = Holder(settings)`: an instance
            owner = owner if _instance(owner) else _MISSING
        if owner is not _MISSING and len(chain) > 1:
            found = witnessed(_attribute, owner, chain[1])
            if found is not None:  # as if held by that name
                held, chain = {**held, chain[1]: found}, chain[1:]
        if chain[0] not in held:
            continue
        path, obj, scope = _resolve(_Scope(held, False), chain)
        # The data it holds, which counts by value (`_count`'s first rule). Not
        # what counts by the statements binding it (a class, a helper, a list, the
        # module used whole), which the closure counted by name before: such a
        # statement read again raised for a module whose functions a decorator
        # remade (hypothesis's `@given`), where a module-level import is read.
        if len(path) > 1 and path not in done and _by_value(obj):
            done.add(path)
            # Keyed apart from a global of the same name (`held.settings.THRESHOLD`);
            # read by the function itself, as a global's attribute is (`runs`).
            _count(path, obj, scope, _rebound(path, obj, scope, module, frozenset()), out, "held.", True)


def _owners(fn: Any, code: types.CodeType, bound: Mapping[str, object]) -> dict[str, object]:
    """A method's `self` (or `cls`): its instance when bound, else its class."""
    if not code.co_argcount:
        return {}
    first = code.co_varnames[0]
    owner = bound.get(_SELF, _MISSING)
    if owner is _MISSING:
        owner = witnessed(_owner, fn)
    return {} if owner is None or owner is _MISSING else {first: owner}


def _attribute(obj: object, name: str) -> object:
    """`obj.name` when it holds a module or a class of the user's, as its
    class or its instance's `__dict__` defines it (no descriptor runs); an
    object of a library's class holds none that counts so: None."""
    cls = obj if isinstance(obj, type) else type(obj)
    if not user_class(cls) or isinstance(obj, types.ModuleType):
        return None
    own = vars(obj).get(name, _MISSING) if not isinstance(obj, type) and hasattr(obj, "__dict__") else _MISSING
    found = class_member(cls, name) if own is _MISSING else own
    return found if _holdable(found) else None


def _by_value(obj: object) -> bool:
    return (plain_tokens(obj, mutable=False) or _enum_tokens(obj) or path_tokens(obj)) is not None


def _instance(obj: object) -> bool:
    """An object of a class of the user's (not a module, class or function)."""
    return not isinstance(obj, (types.ModuleType, type, types.FunctionType)) and user_class(type(obj))


def self_bound(fn: types.MethodType) -> dict[str, object]:
    """A bound method's instance (or class), for `_owners`: not a name
    `held_modules` gives (`cls.scale` of a classmethod counts as before)."""
    return {_SELF: fn.__self__}


def _holdable(value: object) -> bool:
    return isinstance(value, types.ModuleType) or (isinstance(value, type) and user_class(value))


def held_modules(fn: Any, code: types.CodeType, bound: Mapping[str, object]) -> dict[str, object]:
    """The names of `fn`'s code that hold a module or a class of the
    user's (`klass.cfg.THRESHOLD`): its free variables by
    their cells, its parameters by their defaults, or by what a partial
    binds (`bound`, which takes a default's place)."""
    found: dict[str, object] = {}
    cells = getattr(fn, "__closure__", None) or ()
    found.update(zip(code.co_freevars, map(_cell_value, cells), strict=False))
    positional = code.co_varnames[: code.co_argcount]
    defaults = getattr(fn, "__defaults__", None) or ()
    found.update(zip(positional[max(len(positional) - len(defaults), 0) :], defaults, strict=False))
    found.update(getattr(fn, "__kwdefaults__", None) or {})
    found.update((k, v) for k, v in bound.items() if k != _SELF)
    return {k: v for k, v in found.items() if _holdable(v)}


def _owner(fn: Any) -> type | None:
    """The class of the user's own code a method is defined in (by its
    qualified name), when it takes `self` or `cls` first; else None."""
    parts = str(getattr(fn, "__qualname__", "")).split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    obj: Any = getattr(fn, "__globals__", {}).get(parts[0])
    for part in parts[1:-1]:
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and user_class(obj) else None


def partial_bound(fn: Any) -> dict[str, object]:
    """What a `functools.partial` binds, by the parameter names of the
    function it calls (positional arguments fill its first parameters):
    those of a plain function only."""
    if type(fn.func) is not types.FunctionType:  # a bound method's first parameter is taken
        return {}
    code = fn.func.__code__
    return {**dict(zip(code.co_varnames[: code.co_argcount], fn.args, strict=False)), **fn.keywords}
