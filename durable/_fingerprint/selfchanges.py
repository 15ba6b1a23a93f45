"""How a method changes `self.a` where it stands (`objectstate`): bound,
written into, a changing method called on it, or handed to a call that may
change it; and whether that change hands back nothing of what it held.

Pure standard library."""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from collections.abc import Mapping
from typing import Any

from .changers import MUTATORS, library_writer
from .effects import shows
from .inplace import READERS
from .nodes import walk
from .userfiles import is_user_file

# Calls reading what they are handed, changing nothing of it: `sum(self.items)`.
SHOWS = READERS | frozenset("sum min max sorted list tuple set frozenset dict any all enumerate zip".split())


def changes(part: ast.Attribute, parents: Mapping[int, ast.AST], globs: Mapping[str, Any]) -> bool:
    """Whether `self.a` is changed where it stands: bound, written into
    (`self.a[k] = v`, `self.a.b += 1`), a changing method called on it, or
    handed to a call that may change it (`heapq.heappush(self.a, x)`)."""
    node: ast.AST = part
    while True:
        above = parents.get(id(node))
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(above, ast.Attribute) and above.value is node:
            if above.attr in MUTATORS and isinstance(parents.get(id(above)), ast.Call):
                return True
            node = above
        elif isinstance(above, ast.Subscript) and above.value is node:
            node = above
        elif isinstance(above, ast.AugAssign):
            return above.target is node
        elif isinstance(above, ast.Call) and above.func is not node:
            return name_of(above.func) not in SHOWS and _may_change(above.func, globs)
        else:
            return False


def blind(part: ast.Attribute, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the change of `self.a` hands nothing of what `self.a` held
    back to the method: `self.a = v`, `self.a += v`, `self.a[k] = v`, a
    statement `self.a.append(v)` or `self.a[k].append(v)`. A method changing only so (a progress
    counter, a handler keeping records) reads nothing another step wrote."""
    target: ast.AST = part
    above = parents.get(id(part))
    while isinstance(above, ast.Subscript) and above.value is target and isinstance(above.ctx, ast.Load):
        target, above = above, parents.get(id(above))  # an item of it: `self.a[k].append(v)`
    if isinstance(above, ast.Subscript) and above.value is part and isinstance(above.ctx, ast.Store):
        target, above = above, parents.get(id(above))
    if isinstance(above, ast.Assign):
        return target in above.targets
    if isinstance(above, ast.AugAssign):
        return above.target is target
    call = parents.get(id(above)) if isinstance(above, ast.Attribute) and above.attr in MUTATORS else None
    return isinstance(call, ast.Call) and call.func is above and isinstance(parents.get(id(call)), ast.Expr)


def _may_change(func: ast.AST, globs: Mapping[str, Any]) -> bool:
    """Whether a call of `func` may change what it is handed: a function of
    the user's (`fill(self.items)`), one of a library's that changes its
    first argument (`heapq.heappush(self.heap, x)`), or one not found by
    name (`self.fill(...)` is told by its code); not a method of an object
    (`self._client.get(self.url)`) nor another library function."""
    target: Any = globs.get(func.id, builtins.__dict__.get(func.id)) if isinstance(func, ast.Name) else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        held = globs.get(func.value.id)
        target = inspect.getattr_static(held, func.attr, None) if isinstance(held, types.ModuleType) else None
        if not isinstance(held, types.ModuleType):
            return False
    elif not isinstance(func, ast.Name):
        return False
    if library_writer(func, globs):
        return True
    code = getattr(target, "__code__", None)
    home = str(getattr(target, "__module__", None) or "")
    return target is None or (isinstance(code, types.CodeType) and is_user_file(code.co_filename, home.partition(".")[0]))


def name_of(func: ast.AST) -> str:
    """`f` of `f(...)` or of `mod.f(...)`."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def printed_names(d: ast.AST) -> set[int]:
    """The ids of the names `d` prints whole, or in an f-string (`f"{OBJ}"`),
    to the terminal: what it shows is no step's result."""
    calls = [c for c in walk(d) if isinstance(c, ast.Call) and shows(c)]
    values = [v.value for c in calls for a in c.args if isinstance(a, ast.JoinedStr) for v in a.values if isinstance(v, ast.FormattedValue)]
    return {id(a) for a in [*(a for c in calls for a in c.args), *values] if isinstance(a, ast.Name)}
