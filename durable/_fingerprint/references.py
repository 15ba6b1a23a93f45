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

from .imports import body_modules
from .reach import (
    _MISSING,
    _cell_value,
    _followable,
    _target,
    class_member,
    code_objects,
    held_callables,
    is_durable,
)


def referenced_objects(fn: Callable[..., Any], *, deep: bool = True) -> list[object]:
    """Objects the function can reach by name: globals (and attributes of
    global modules) named in its body and nested functions, closure cells,
    defaults and bound arguments, in first-seen order. With `deep`, also
    what the user's plain functions it reaches reference, transitively, so
    that a step called through a helper is found; steps and workflows are
    not entered. Works from code objects alone, without source; what an
    import in a body binds counts too (the user's modules only, `imports`)."""
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
                if deep and not is_durable(obj) and _followable(obj):
                    queue.append(obj)
    return list(found.values())


def _direct_references(fn: object) -> Iterator[object]:
    if isinstance(fn, functools.partial):
        yield from (fn.func, *fn.args, *fn.keywords.values())
    target = _target(fn)
    code = getattr(target, "__code__", None)
    if not isinstance(code, types.CodeType):
        return
    for live in _live_objects(target):
        yield live
        yield from held_callables(live)
    globs: Mapping[str, Any] = getattr(target, "__globals__", {})
    # `from tasks import fetch` in the body: `fetch` is a member of `tasks`.
    for module in body_modules(code, str(globs.get("__package__") or "")):
        for item in _members(module, tuple(n for co in code_objects(code) for n in co.co_names)):
            if item is not _MISSING:
                yield item
                yield from held_callables(item)
    for co in code_objects(code):
        for n in co.co_names:
            obj = globs.get(n, _MISSING)
            for item in (obj, *_members(obj, co.co_names)):
                if item is not _MISSING:
                    yield item
                    yield from held_callables(item)


def _live_objects(fn: Any) -> Iterator[object]:
    for cell in getattr(fn, "__closure__", None) or ():
        value = _cell_value(cell)
        if value is not _MISSING:
            yield value
    yield from getattr(fn, "__defaults__", None) or ()
    yield from (getattr(fn, "__kwdefaults__", None) or {}).values()


def _members(obj: object, names: tuple[str, ...]) -> Iterator[object]:
    # `tasks.fetch(...)`, `Steps.fetch(...)`: the attribute names sit in the
    # same co_names.
    if isinstance(obj, types.ModuleType):
        for n in names:
            yield getattr(obj, n, _MISSING)
    elif isinstance(obj, type):
        for n in names:
            yield class_member(obj, n)
