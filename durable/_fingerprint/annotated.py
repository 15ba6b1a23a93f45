"""The classes a function's annotations name, where something reads them:
`def convert(v: money.Money)` decorated by a validator (pydantic's
`validate_call`, one of the user's reading `typing.get_type_hints(fn)` or
`inspect.signature(fn)`) or handed to one (`validate(convert, x)`), which
calls `Money(v)` on each argument. An annotation is evaluated around the
function, not in it, so its code never named `Money`: counted by it alone,
an edit of `Money` replayed the value converted by its old code. Only then:
a plain function's annotations are documentation, and counting the
classes they name would refuse resumes over edits nothing runs.

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from .imports import user_class
from .nodes import walk
from .reach import module_label
from .witness import witnessed


@lru_cache(maxsize=4096)  # nodes come from trees cached by their text
def handed_chains(nodes: tuple[ast.AST, ...]) -> frozenset[tuple[str, ...]]:
    """The dotted names the code hands to a call as an argument
    (`validate(typed.handed, x)`), not calls itself."""
    found: set[tuple[str, ...]] = set()
    for call in (n for node in nodes for n in walk(node) if isinstance(n, ast.Call)):
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            chain = _chain(arg.value if isinstance(arg, ast.Starred) else arg)
            if chain:
                found.add(chain)
    return frozenset(found)


def _chain(node: ast.AST) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return (node.id, *parts) if isinstance(node, ast.Name) else ()


def annotated_classes(fn: object) -> tuple[tuple[str, type, Mapping[str, Any]], ...]:
    """(key, class, the namespace of the module defining it) for each class
    of the user's that `fn`'s annotations name (`Money`, `list[Money]`,
    `"money.Money"`, `Optional["Money"]`). A tuple: a memo's check of it
    is identity tests alone."""
    held = getattr(fn, "__annotations__", None) if isinstance(fn, types.FunctionType) else None
    if not isinstance(held, dict) or not isinstance(fn, types.FunctionType):
        return ()
    found: dict[int, tuple[str, type, Mapping[str, Any]]] = {}
    for value in list(held.values()):
        for cls in _named(value, fn.__globals__, 0):
            home = sys.modules.get(cls.__module__)
            if home is not None and user_class(cls):
                found[id(cls)] = (f"annotation:{module_label(cls.__module__)}.", cls, vars(home))
    return tuple(found.values())


def _named(value: object, globs: Mapping[str, Any], depth: int) -> Iterator[type]:
    if depth > 8:
        return
    if isinstance(value, type) and not typing.get_args(value):
        yield value
    elif isinstance(value, str):
        try:
            tree = ast.parse(value.strip(), mode="eval")
        except SyntaxError:
            return
        for node in walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):  # `Optional["Money"]`
                yield from _named(node.value, globs, depth + 1)
            chain = _chain(node) if isinstance(node, (ast.Name, ast.Attribute)) else ()
            obj = globs.get(chain[0]) if chain else None
            for attr in chain[1:]:
                obj = getattr(obj, attr, None) if isinstance(obj, (types.ModuleType, type)) else None
            if obj is not None:
                yield from _named(obj, globs, depth + 1)
    for inner in [*typing.get_args(value), typing.get_origin(value)]:
        if inner is not None and inner is not value:
            yield from _named(inner, globs, depth + 1)


# Decorators known not to read annotations (the standard library's own
# wrappers): a function under them alone counts as a plain one.
_PLAIN = frozenset({
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "cached_property",
    "lru_cache", "cache", "wraps", "contextmanager", "asynccontextmanager", "abstractmethod",
    "overload", "override", "total_ordering",
})  # fmt: skip


def reads_annotations(decorators: list[ast.expr]) -> bool:
    """Whether a decorator may read the function's annotations: any but `_PLAIN`'s."""
    for dec in decorators:
        func = dec.func if isinstance(dec, ast.Call) else dec
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _PLAIN:
            return True
    return False


def annotations_read(fn: object, decorated: bool, handed: bool) -> tuple[tuple[str, type, Mapping[str, Any]], ...]:
    """`annotated_classes` of `fn` when something may read them: it is
    decorated by a decorator not durable's, or handed to a call."""
    return witnessed(annotated_classes, fn) if decorated or handed else ()
