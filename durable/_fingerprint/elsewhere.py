"""A module's global set from another module of the user's code:
`settings.RATES = [3]` in `plugin.py`, or in a function of it that its
import calls (`configure()`), `setattr(settings, "RATES", ...)`. The
statements of `settings` that bind `RATES` do not show it, so what a step
reads as `settings.RATES` would count by a statement that no longer made
it: those other statements count too (each whole module-level statement,
a `def` for a write in its body), fail closed, whether or not it ran.

Pure standard library."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .bindings import module_statements
from .canon import node_hash
from .imports import user_module
from .source import parse, source_of

# The key of a write whose attribute is not a string in the text
# (`setattr(settings, name, value)`): it may set any name.
_ANY = "?"


def written_elsewhere(namespace: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The hashes of the module-level statements of the user's other loaded
    modules that set `name` (or any attribute by a name not in the text) on
    the module whose namespace is `namespace`. ConfigurationError when such
    a module's file was edited after import: its text is not what ran."""
    home = sys.modules.get(str(namespace.get("__name__")))
    if home is None or vars(home) is not namespace:
        return ()
    found: list[str] = []
    for module in _user_modules():
        if module is home:
            continue
        src = source_of(module.__file__, vars(module))  # type: ignore[arg-type]
        writes = _writes(src.text)
        units = [
            u
            for base, u in [*writes.get(name, ()), *writes.get(_ANY, ())]
            if _holds(vars(module), base, home)
        ]
        if units:
            module_statements(vars(module))  # refused when edited after import
        found += [node_hash(u) for u in dict.fromkeys(units)]
    return tuple(found)


_LOADED: tuple[tuple[object, ...], tuple[types.ModuleType, ...]] = ((), ())


def _user_modules() -> tuple[types.ModuleType, ...]:
    """The user's modules loaded now, with a file; computed again when
    `sys.modules` changed (asked for each global a step reads)."""
    global _LOADED
    loaded = tuple(sys.modules.values())
    if loaded != _LOADED[0]:
        users = (
            m
            for m in loaded
            if isinstance(m, types.ModuleType) and isinstance(getattr(m, "__file__", None), str)
        )
        _LOADED = (loaded, tuple(m for m in users if user_module(m)))
    return _LOADED[1]


def _holds(namespace: Mapping[str, Any], base: tuple[str, ...], home: types.ModuleType) -> bool:
    """Whether the name chain `base` holds `home` in `namespace`
    (`settings`, `pkg.settings`; any module for `sys.modules[...]`)."""
    if base == _ANY_MODULE:
        return True
    obj: object = namespace.get(base[0])
    for attr in base[1:]:
        obj = getattr(obj, attr, None) if isinstance(obj, types.ModuleType) else None
    return obj is home


@lru_cache(maxsize=256)
def _writes(text: str) -> dict[str, list[tuple[tuple[str, ...], ast.AST]]]:
    """attribute -> (name chain of the object, module-level statement) for
    each statement that sets or deletes that attribute, at any depth
    (`x.K = 1`, `del x.K`, `setattr(x, "K", 1)`)."""
    tree = parse(text).tree if "setattr" in text or "." in text else None
    index: dict[str, list[tuple[tuple[str, ...], ast.AST]]] = {}
    for unit in tree.body if tree else []:
        for node in ast.walk(unit):
            target: tuple[ast.AST, str] | None = None
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                target = (node.value, node.attr)
            elif _sets(node):
                args = node.args  # type: ignore[attr-defined]
                key = args[1].value if isinstance(args[1], ast.Constant) else _ANY
                target = (args[0], key if isinstance(key, str) else _ANY)
            chain = _chain(target[0]) if target else None
            if target and chain:
                index.setdefault(target[1], []).append((chain, unit))
    return index


def _sets(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and len(node.args) >= 2
    )


# The chain of a module taken out of `sys.modules` (`sys.modules["settings"]`,
# `sys.modules[name]`): it may be any module.
_ANY_MODULE = ("sys", "modules", "[]")


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    if isinstance(node, ast.Subscript) and _chain(node.value) == _ANY_MODULE[:2]:
        return _ANY_MODULE
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        head = _chain(node.value)
        return (*head, node.attr) if head else None
    return None
