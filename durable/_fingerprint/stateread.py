"""The module-level names a function reads that a function of its module
changes as the program runs (`STATE[k] = v` in a step, `global RATE; RATE
= r`): their value at a call is no part of its fingerprint, which counts a
global by the statements binding it (`STATE = {}`), so a cached step reading
one is keyed on its value too (`_core.cachekey`). What a step changes that
another reads is `stepstate`'s.

Pure standard library. Found by the text: once per code object (what code does with
a name cannot change), and once per parsed module for what its functions change.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from .inplace import READERS, _changes
from .kept import by_code
from .nodes import walk
from .reach import code_objects
from .source import find_definitions, runs_this_source, source_of
from .written import written_in

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_KNOWN: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_CHANGED: dict[int, tuple[ast.AST, frozenset[str]]] = {}  # id of a module's tree -> (it, names)


def state_read(fn: Any) -> tuple[str, ...]:
    """The globals `fn` reads that another function of its module changes
    in place or rebinds with `global`; not one `fn` changes itself (a
    counter it bumps, even one whose count it returns: its own state, as
    in its fingerprint); () when its source cannot be read."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ()
    return by_code(_KNOWN, code, lambda: _analyse(fn, code))


def _analyse(fn: Any, code: types.CodeType) -> tuple[str, ...]:
    globs = getattr(fn, "__globals__", None)
    src = source_of(code.co_filename, globs)
    if src.tree is None or not runs_this_source(code, src, globs):
        return ()
    names = frozenset(n for c in code_objects(code) for n in c.co_names)
    changed = _changed_by_functions(src.tree) & names
    if not changed:
        return ()
    return tuple(sorted(changed - written_in(find_definitions(code, src))))


def _changed_by_functions(tree: ast.AST) -> frozenset[str]:
    """The names the functions of a module change in place (`STATE[k] =
    v`, `LOG.append(x)`, `fill(STATE)`) or rebind with `global`."""
    seen = _CHANGED.get(id(tree))
    if seen is not None and seen[0] is tree:
        return seen[1]
    found = _changed_in([n for n in walk(tree) if isinstance(n, _FUNCS)])
    if len(_CHANGED) > 256:
        _CHANGED.clear()
    _CHANGED[id(tree)] = (tree, found)
    return found


def _changed_in(defs: list[ast.AST]) -> frozenset[str]:
    found: set[str] = set()
    for fn in defs:
        found.update(n for stmt in getattr(fn, "body", ()) for n in _changes(stmt, READERS))
        found.update(n for g in walk(fn) if isinstance(g, ast.Global) for n in g.names)
    return frozenset(found)
