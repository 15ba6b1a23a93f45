"""Attributes of a module a function reads by a name spelled as a string:
`getattr(settings, "THRESHOLD")`, `getattr(settings, NAME)` with `NAME` a
global holding a string, `importlib.import_module("settings").THRESHOLD`
(or of `NAME`). `lookups` counts such a module whole (its statements and
what they rebind), which left a value another module set at run time
(`settings.THRESHOLD = 2` in `main()`) uncounted: the resume replayed what
1 gave. Each such read counts as the chain it spells (`settings.THRESHOLD`)
does, by the rule and the code of `reads` (`_resolve`, `_count`).

Pure standard library."""

from __future__ import annotations

import ast
import builtins
import importlib
import types
from collections.abc import Mapping
from typing import Any

from .analysis import Analysis
from .imports import import_user_module
from .modfiles import works_at_import
from .nodes import walk
from .reach import _MISSING, code_objects
from .reads import _count, _resolve, _Scope
from .witness import witnessed

# A name the code must look up to call either (`importlib.import_module`: `import_module` is an attribute's name).
_FINDERS = frozenset({"getattr", "import_module"})


def read_spelled(fn: Any, nodes: list[ast.AST], code: types.CodeType, out: Analysis) -> None:
    """Count what `nodes` read through `getattr` or `import_module` with a
    name told by a string constant or a global holding one."""
    if _FINDERS.isdisjoint(n for co in code_objects(code) for n in co.co_names):
        return  # most functions: no walk of their tree
    globs: Mapping[str, Any] = getattr(fn, "__globals__", {})
    module = _Scope(globs, True, code.co_filename)
    done: set[tuple[str, tuple[str, ...]]] = set()
    for node in (n for root in nodes for n in walk(root)):
        found = _spelled(node, globs)
        if found is None:
            continue
        names, chain, via = found
        scope = module if names is None else _Scope(names, False)
        path, obj, where = _resolve(scope, chain)
        if len(path) > 1 and (via, path) not in done:
            done.add((via, path))
            _count(path, obj, where, False, out, via, True)


def _spelled(
    node: ast.AST, globs: Mapping[str, Any]
) -> tuple[dict[str, object] | None, tuple[str, ...], str] | None:
    """For `getattr(a.b, NAME).c` (or a call alone): None as the names
    (the function's globals), the chain `a.b.<NAME's string>.c`, and the
    key's prefix; for `import_module(NAME).c`, the module by its name, the
    chain `<name>.c` and "import."."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Call) or not node.args:
        return None
    called = _dotted(node.func)
    if called == ("getattr",) and len(node.args) >= 2 and globs.get("getattr", _MISSING) is _MISSING:
        base, name = _dotted(node.args[0]), _string(node.args[1], globs)
        if base and name is not None:
            return None, (*base, name, *attrs), ""
    elif called and len(node.args) == 1 and _is_import_module(called, globs):
        name = _string(node.args[0], globs)
        if name and witnessed(works_at_import, name) is not None:
            return None  # `train`, training at import: `lookups` counts its file's text
        module = witnessed(import_user_module, name) if name else None
        if isinstance(module, types.ModuleType) and name is not None:
            return {name: module}, (name, *attrs), "import."
    return None


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return (node.id, *parts) if isinstance(node, ast.Name) else ()


def _string(node: ast.AST, globs: Mapping[str, Any]) -> str | None:
    """A string constant, or the string a global of that name holds now."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        value = witnessed(globs.get, node.id, _MISSING)
        return value if isinstance(value, str) else None
    return None


def _is_import_module(chain: tuple[str, ...], globs: Mapping[str, Any]) -> bool:
    obj = witnessed(globs.get, chain[0], _MISSING)
    if obj is _MISSING:
        obj = vars(builtins).get(chain[0], _MISSING)
    for attr in chain[1:]:
        obj = witnessed(getattr, obj, attr, _MISSING) if isinstance(obj, types.ModuleType) else _MISSING
    return obj is importlib.import_module
