"""What a caller does with a memo's entry a function hands out
(`selffills.memo_only`): changing it where it stands (`lookup(k).append(x)`),
through the local it is bound to, or by handing it to a function that
changes it (`fill(lookup(k))`, `heapq.heappush(lookup(k), x)`). A fresh
process's entry lacks what such a caller added. Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .changers import MUTATORS
from .nodes import walk

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def named(func: ast.AST) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def changed_result(node: ast.AST, parents: Mapping[int, ast.AST], depth: int = 0) -> bool:
    """Whether what `node` gives is changed where it stands (written into, a
    changing method called on it: `lookup(k).append(x)`) or through the
    local it is bound to (`v = lookup(k)`, then `v[0] = x`)."""
    while True:
        above = parents.get(id(node))
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(above, (ast.Attribute, ast.Subscript)) and above.value is node:
            call = parents.get(id(above))
            if isinstance(above, ast.Attribute) and above.attr in MUTATORS and isinstance(call, ast.Call) and call.func is above:
                return True
            node = above
        elif isinstance(above, ast.AugAssign):
            return above.target is node
        elif isinstance(above, ast.Assign) and above.value is node and depth < _DEEPEST:
            names = {t.id for t in above.targets if isinstance(t, ast.Name)}
            fn = next((p for p in ancestors(above, parents) if isinstance(p, FUNCS)), None)
            return _changed_names(fn, names, parents, depth + 1)
        elif isinstance(above, (ast.Call, ast.keyword)) and getattr(above, "func", None) is not node:
            return depth < _DEEPEST and _handed_to_writer(node, above, parents, depth + 1)
        else:
            return False


def _changed_names(fn: ast.AST | None, names: set[str], parents: Mapping[int, ast.AST], depth: int) -> bool:
    """Whether `fn` changes what its locals or parameters `names` hold."""
    uses = [n for n in walk(fn) if isinstance(n, ast.Name) and n.id in names] if fn is not None else []
    return any(isinstance(n.ctx, ast.Load) and changed_result(n, parents, depth) for n in uses)


def _handed_to_writer(node: ast.AST, above: ast.AST, parents: Mapping[int, ast.AST], depth: int) -> bool:
    """Whether the call `node` is handed to changes it: a library function
    changing what it is handed first (`heapq.heappush(lookup(k), x)`), or a
    function of the module changing the parameter taking it, itself or
    through a call it hands it on to (`fill(lookup(k))` of `def
    fill(items): items.append(x)`); one taking it in `*args` or `**kwargs`
    counts as changing it. A function of another module's is not looked into."""
    call = parents.get(id(above)) if isinstance(above, ast.keyword) else above
    if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
        return isinstance(call, ast.Call)  # `f(*xs, lookup(k))`: where it lands is not told
    name = named(call.func)
    if name in _LIBRARY_WRITERS:
        return bool(call.args) and call.args[0] is node
    tree = ancestors(call, parents)[-1]
    for fn in (d for d in walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name):
        params = [*fn.args.posonlyargs, *fn.args.args]
        if params and isinstance(call.func, ast.Attribute) and isinstance(parents.get(id(fn)), ast.ClassDef):
            params = params[1:]  # `obj.fill(lookup(k))`: after `self`
        if isinstance(above, ast.keyword):
            taken = [p.arg for p in [*params, *fn.args.kwonlyargs] if p.arg == above.arg]
            rest = fn.args.kwarg
        else:
            at = call.args.index(node)  # type: ignore[arg-type]
            taken = [params[at].arg] if at < len(params) else []
            rest = fn.args.vararg
        if (not taken and rest is not None) or _changed_names(fn, set(taken), parents, depth):
            return True
    return False


# What a library changes of the object it is handed first (`changers._WRITERS`, numpy's).
_LIBRARY_WRITERS = frozenset(
    "heappush heappop heapify heapreplace heappushpop insort insort_left insort_right shuffle "
    "copyto put place putmask fill_diagonal".split()
)
_DEEPEST = 4  # hand-offs followed: locals bound and calls handed on


def ancestors(node: ast.AST, parents: Mapping[int, ast.AST]) -> list[ast.AST]:
    found, at = [], parents.get(id(node))
    while at is not None:
        found.append(at)
        at = parents.get(id(at))
    return found
