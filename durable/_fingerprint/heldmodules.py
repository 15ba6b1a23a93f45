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
from .reach import _cell_value, class_member
from .reads import _count, _rebound, _resolve, _Scope
from .witness import witnessed


def read_held(
    fn: Any, nodes: list[ast.AST], code: types.CodeType, out: Analysis, bound: Mapping[str, object]
) -> None:
    """Count the chains of `nodes` that start at a name holding a module
    (`held_modules`); `bound`: what a partial passes by parameter name."""
    held = held_modules(fn, code, bound)
    owner = witnessed(_owner, fn, code)  # `self.cfg.THRESHOLD`, `cfg = settings` in its class
    if not held and owner is None:
        return
    module = _Scope(getattr(fn, "__globals__", {}), True, code.co_filename)
    done: set[tuple[str, ...]] = set()
    for chain in chains_of(tuple(nodes)):
        if owner is not None and len(chain) > 1 and chain[0] == code.co_varnames[0]:
            found = witnessed(class_member, owner, chain[1])
            if isinstance(found, types.ModuleType):  # as if held by that name
                held, chain = {**held, chain[1]: found}, chain[1:]
        if chain[0] not in held:
            continue
        path, obj, scope = _resolve(_Scope(held, False), chain)
        if path not in done:
            done.add(path)
            # Keyed apart from a global of the same name (`held.settings.THRESHOLD`);
            # read by the function itself, as a global's attribute is (`runs`).
            _count(path, obj, scope, _rebound(path, obj, scope, module, frozenset()), out, "held.", True)


def held_modules(fn: Any, code: types.CodeType, bound: Mapping[str, object]) -> dict[str, types.ModuleType]:
    """The names of `fn`'s code that hold a module: its free variables by
    their cells, its parameters by their defaults, or by what a partial
    binds (`bound`, which takes a default's place)."""
    found: dict[str, object] = {}
    cells = getattr(fn, "__closure__", None) or ()
    found.update(zip(code.co_freevars, map(_cell_value, cells), strict=False))
    positional = code.co_varnames[: code.co_argcount]
    defaults = getattr(fn, "__defaults__", None) or ()
    found.update(zip(positional[max(len(positional) - len(defaults), 0) :], defaults, strict=False))
    found.update(getattr(fn, "__kwdefaults__", None) or {})
    found.update(bound)
    return {k: v for k, v in found.items() if isinstance(v, types.ModuleType)}


def _owner(fn: Any, code: types.CodeType) -> type | None:
    """The class of the user's own code a method is defined in (by its
    qualified name), when it takes `self` or `cls` first; else None."""
    parts = str(getattr(fn, "__qualname__", "")).split(".")
    if len(parts) < 2 or "<locals>" in parts or not code.co_argcount:
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
