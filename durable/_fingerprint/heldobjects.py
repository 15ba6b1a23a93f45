"""The objects of your class a step reaches without naming them as the
receiver of a method call (`objectstate`): a method held bound (`ADD =
STORE.remember`, in a dict, a list, a namespace, a `functools.partial`),
and the methods it calls on the module's objects (`SVC.go(x)`), whose own
writes of the module's globals are the step's.

Pure standard library."""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .nodes import walk
from .source import find_definitions, runs_this_source, source_of
from .userclasses import users_class


def bound_in(value: object, depth: int) -> Iterator[tuple[object, str]]:
    """The objects of your class whose method `value` holds bound, with the
    method's name: a bound method, a `functools.partial` of one or of a
    method of the class handed the object first (`partial(Store.remember,
    STORE)`), or one a dict, list, tuple or namespace holds (two levels
    down, the first 256 items of each: a table of data holds no methods)."""
    for _ in range(8):  # partials of partials
        if not isinstance(value, functools.partial):
            break
        first = value.args[0] if value.args else None
        if isinstance(value.func, types.FunctionType) and mine(first):
            if inspect.getattr_static(type(first), value.func.__name__, None) is value.func:
                yield first, value.func.__name__
            return
        value = value.func
    if isinstance(value, types.MethodType) and mine(value.__self__):
        yield value.__self__, value.__func__.__name__
    elif depth < 2 and type(value) in (dict, list, tuple, types.SimpleNamespace):
        items = value.values() if isinstance(value, dict) else vars(value).values() if isinstance(value, types.SimpleNamespace) else value
        for item in list(itertools.islice(items, 256)):  # type: ignore[call-overload]
            yield from bound_in(item, depth + 1)


def held_methods(defs: list[ast.AST], globs: Mapping[str, Any]) -> list[tuple[str, ast.AST]]:
    """The methods `defs` call on objects of your class the module holds
    (`SVC.go(x)`), and those these call through `self`, defined in the
    module: (the global's name, the method's `def`). What they write of its
    globals (`LIST.append(x)`, `otherstore.LIST.append(x)`) the step
    writes, as through a plain function it calls; what they only write, a
    step calling them does not read (`stepreach.written_only`)."""
    found: list[tuple[str, ast.AST]] = []
    todo = [(name, attr, globs.get(name)) for name, attr in _calls(defs)]
    while todo and len(found) < 64:
        name, attr, obj = todo.pop()
        member = inspect.getattr_static(type(obj), attr, None) if mine(obj) else None
        fn = getattr(member, "__func__", member)
        if not isinstance(fn, types.FunctionType) or fn.__globals__ is not globs:
            continue
        for d in definitions(fn):
            if all(d is not f for _, f in found) and isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((name, d))
                first = [a.arg for a in [*d.args.posonlyargs, *d.args.args][:1]]
                todo += [(name, attr, obj) for me, attr in _calls([d]) if [me] == first]
    return found


def _calls(defs: list[ast.AST]) -> list[tuple[str, str]]:
    """The calls `name.attr(...)` of `defs`: (name, attr)."""
    return [
        (n.func.value.id, n.func.attr) for d in defs for n in walk(d)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
    ]  # fmt: skip


def only_functions(value: object, globs: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether what an object holds (a dict, list, tuple or namespace of
    them, two levels down) is only functions given no object, each bound by
    its name in the module `globs` are of (a `def` there, a class there, a
    builtin): a call of one changes nothing of the object but through the
    globals it writes, which a step reaching the object by name writes too.
    Not a bound method, a `partial`, a lambda, a closure, nor another
    module's function, whose writes no step's reach of the names sees."""
    if isinstance(value, (types.FunctionType, type)):
        named = globs.get(value.__name__) is value and value.__qualname__ == value.__name__  # type: ignore[union-attr]
        return named and getattr(value, "__closure__", None) is None
    if isinstance(value, types.BuiltinFunctionType):
        return isinstance(value.__self__, types.ModuleType) and value.__self__.__name__ == "builtins"
    if depth < 2 and type(value) in (dict, list, tuple, types.SimpleNamespace):
        items = value.values() if isinstance(value, dict) else vars(value).values() if isinstance(value, types.SimpleNamespace) else value
        held = list(itertools.islice(items, 257))  # type: ignore[call-overload]
        return len(held) <= 256 and all(only_functions(v, globs, depth + 1) for v in held)
    return False


def own_attributes(value: object) -> dict[str, object]:
    """What an object holds in its `__dict__`, read without running its
    code (a `__getattr__` raising for any name: none, as for slots)."""
    try:
        found = object.__getattribute__(value, "__dict__")
    except Exception:  # no `__dict__` (slots), or a descriptor raising
        return {}
    return dict(found) if isinstance(found, dict) else {}


def only_called(name: str, defs: list[ast.AST]) -> bool:
    """Whether every use of `name` in `defs` calls a method of what it
    holds (`PBAR.update(1)`): what that changes, `objectstate.object_writes` tells by
    the method's code, not by its name."""
    parents = {id(c): p for d in defs for p in walk(d) for c in ast.iter_child_nodes(p)}
    uses = [n for d in defs for n in walk(d) if isinstance(n, ast.Name) and n.id == name]
    return all(isinstance(a := parents.get(id(n)), ast.Attribute) and isinstance(c := parents.get(id(a)), ast.Call) and c.func is a for n in uses)


def mine(value: object) -> bool:
    """An object of the user's class: no class, module or function."""
    return not isinstance(value, (type, types.ModuleType, types.FunctionType)) and users_class(type(value))


def definitions(fn: types.FunctionType) -> list[ast.AST]:
    """The `def` of `fn` in the source that runs; [] where it cannot be read."""
    code = fn.__code__
    src = source_of(code.co_filename, fn.__globals__)
    return find_definitions(code, src) if src.tree is not None and runs_this_source(code, src, fn.__globals__) else []


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# A property whose code does more than hand back one of the object's attributes.
UNTOLD = object()


def member_of(obj: object, attr: str) -> object:
    """What a use of `obj.attr` reaches, read without running code: a property
    handing back one of its attributes (`return self._store`) as that attribute
    (`SVC.store.remember(x)` changes what `SVC._store` holds); `UNTOLD` for
    another property."""
    found = inspect.getattr_static(obj, attr, None)
    if not isinstance(found, property):
        return found
    fn = found.fget
    defs = definitions(fn) if isinstance(fn, types.FunctionType) else []
    if len(defs) != 1 or not isinstance(defs[0], _FUNCS):
        return UNTOLD
    body = [s for s in defs[0].body if not _docstring(s)]
    params = [*defs[0].args.posonlyargs, *defs[0].args.args]
    value = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) and params else None
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == params[0].arg:
        return inspect.getattr_static(obj, value.attr, UNTOLD)
    return UNTOLD


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
