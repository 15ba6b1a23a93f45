"""Every object a function can reach by name, for the engine: a workflow's
definition is the steps and workflows it reaches. Told from code objects
alone (globals and module members named in the code, closures, defaults,
partials' arguments, and what imports in the body bind); nothing here reads
source."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .holds import held_callables, holds_callables
from .imports import body_modules
from .reach import (
    _MISSING,
    _cell_value,
    _followable,
    class_member,
    code_objects,
    is_builtin_value,
    is_durable,
    may_answer,
    target_of,
)
from .witness import witnessed


def referenced_objects(fn: Callable[..., Any], *, deep: bool = True) -> list[object]:
    """Objects the function can reach by name: globals (and attributes of
    global modules) named in its body and nested functions, closure cells,
    defaults and bound arguments, in first-seen order. With `deep`, also
    what the user's plain functions it reaches reference, transitively, so
    that a step called through a helper is found; steps and workflows are
    not entered. Works from code objects alone, without source; what an
    import in a body binds counts too (the user's modules only, `imports`).
    Everything it reads of the running program is `witnessed`, so that a
    workflow's definition can be memoised on it (`_api.definition`)."""
    found: dict[int, object] = {}
    queue: list[object] = [fn]
    entered: set[int] = set()
    while queue:
        current = queue.pop(0)
        if id(current) in entered:
            continue
        entered.add(id(current))
        for obj in _direct_references(current):
            if id(obj) not in found:
                found[id(obj)] = obj
                if deep and not is_builtin_value(obj) and witnessed(_entered, obj):
                    queue.append(obj)
    return list(found.values())


def _entered(obj: object) -> bool:
    """Whether the walk goes into `obj`: the user's plain functions, never steps."""
    return not is_durable(obj) and _followable(obj)


def _direct_references(fn: object) -> Iterator[object]:
    yield from witnessed(_partial_references, fn)
    target = witnessed(target_of, fn)
    code = witnessed(getattr, target, "__code__", None)
    if not isinstance(code, types.CodeType):
        return
    for live in witnessed(_live_objects, target):
        yield live
        yield from _held(live)
    globs: Mapping[str, Any] = witnessed(getattr, target, "__globals__", None) or {}
    # `from tasks import fetch` in the body: `fetch` is a member of `tasks`.
    package = str(witnessed(globs.get, "__package__") or "")
    names = tuple(n for co in code_objects(code) for n in co.co_names)
    for module in witnessed(_body_modules, code, package):
        for item in witnessed(_members, module, names):
            yield item
            yield from _held(item)
    for co in code_objects(code):
        for n in co.co_names:
            obj = witnessed(globs.get, n, _MISSING)
            for item in (obj, *witnessed(_members, obj, co.co_names)):
                if item is not _MISSING:
                    yield item
                    yield from _held(item)


def _held(value: object) -> list[object]:
    # Only a container's contents can change; nothing else holds anything.
    return witnessed(held_callables, value) if holds_callables(value) else []


def _partial_references(fn: object) -> tuple[object, ...]:
    if isinstance(fn, functools.partial):
        return (fn.func, *fn.args, *fn.keywords.values())
    return ()


def _body_modules(code: types.CodeType, package: str) -> tuple[types.ModuleType, ...]:
    return tuple(body_modules(code, package))


def _live_objects(fn: Any) -> tuple[object, ...]:
    cells = (_cell_value(c) for c in getattr(fn, "__closure__", None) or ())
    return (
        *(v for v in cells if v is not _MISSING),
        *(getattr(fn, "__defaults__", None) or ()),
        *(getattr(fn, "__kwdefaults__", None) or {}).values(),
    )


def _module_member(module: types.ModuleType, name: str) -> object:
    """`getattr(module, name, _MISSING)` without an exception for each name
    the module lacks (most of a body's names: a memo check asks for every
    one). A plain module's attribute is in its `__dict__`, or comes from
    its `__getattr__` (PEP 562), or, for a dunder name, from the type."""
    names = module.__dict__
    found = names.get(name, _MISSING)
    if found is _MISSING and (
        name.startswith("__") or ("__getattr__" in names and may_answer(names, name))
    ):
        try:
            return getattr(module, name, _MISSING)
        except Exception:  # a lazy loader's `import_module("." + name)`: no such member, the code never asks
            return _MISSING
    return found


def _members(obj: object, names: tuple[str, ...]) -> tuple[object, ...]:
    """`tasks.fetch(...)`, `Steps.fetch(...)`: the attribute names sit in the
    same co_names. The members found, without `_MISSING`."""
    if type(obj) is types.ModuleType:
        found = (_module_member(obj, n) for n in names)
    elif isinstance(obj, types.ModuleType):
        found = (getattr(obj, n, _MISSING) for n in names)
    elif isinstance(obj, type):
        found = (class_member(obj, n) for n in names)
    else:
        return ()
    return tuple(item for item in found if item is not _MISSING)
