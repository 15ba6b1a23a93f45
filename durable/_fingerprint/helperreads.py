"""The helpers of the user's other modules that a step or workflow calls
(`helpers.describe()`, `describe()` imported from `helpers`), and those
they call in turn, as readers of the globals a step of its module writes
(`stepstate.state_written`): a helper there reading the same object
(`Cfg.mode`, `STATE["mode"]` of a `config` both import, by name or as
`config.STATE`) reads what a replay does not write again. Not followed, a
run resumed in a new process went on with the value the import left.

Pure standard library."""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator, Mapping
from typing import Any

from .nodes import walk
from .reach import is_user_code
from .source import find_definitions, runs_this_source, source_of

_Def = tuple[ast.AST, frozenset[str], "str | None"]
# Past this many helpers, the rest is not looked at (a step's module calling
# into a large package): each is parsed once per process.
_FOLLOWED = 256


def helper_readers(defs: list[ast.AST], globs: Mapping[str, Any], written: frozenset[str]) -> list[_Def]:
    """The definitions of the other modules' helpers `defs` reach, each with
    the names among `written` (globals of `globs`) whose objects it reads."""
    if not written:
        return []
    found: list[_Def] = []
    todo = [fn for d in defs for fn in _called(d, globs) if fn.__globals__ is not globs]
    seen: set[int] = set()
    while todo and len(seen) < _FOLLOWED:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code, space = fn.__code__, fn.__globals__
        src = source_of(code.co_filename, space)
        if src.tree is None or not runs_this_source(code, src, space):
            continue
        for node in find_definitions(code, src):
            names = frozenset(_reads(node, space, globs, written))
            if names:
                found.append((node, names, None))
            todo += _called(node, space)
    return found


def _reads(node: ast.AST, space: Mapping[str, Any], globs: Mapping[str, Any], written: frozenset[str]) -> set[str]:
    """The names among `written` (globals of `globs`) whose objects `node`
    names (`Cfg`) or reads through a module (`config.STATE`, `flow.RATE`).
    A number or a string by its module's name alone: the same small int is
    every module's (`RATE = 1`), and a name importing it holds a copy."""
    targets = {id(globs[w]): w for w in written if w in globs and not isinstance(globs[w], _SCALARS)}
    found: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name) and sub.id in space:
            found.add(targets.get(id(space[sub.id]), ""))
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            module = space.get(sub.value.id)
            if isinstance(module, types.ModuleType) and sub.attr in vars(module):
                if vars(module) is globs and sub.attr in written:
                    found.add(sub.attr)
                found.add(targets.get(id(vars(module)[sub.attr]), ""))
    return found - {""}


_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _called(node: ast.AST, space: Mapping[str, Any]) -> Iterator[types.FunctionType]:
    """The functions of the user's `node` calls by a name of its module or
    through a module (`describe()`, `helpers.describe()`)."""
    for sub in walk(node):
        if not isinstance(sub, ast.Call):
            continue
        func, target = sub.func, None
        if isinstance(func, ast.Name):
            target = space.get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = space.get(func.value.id)
            target = vars(module).get(func.attr) if isinstance(module, types.ModuleType) else None
        if type(target) is types.FunctionType and is_user_code(target):
            yield target
