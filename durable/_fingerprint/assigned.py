"""Names a module-level statement changes in place by its own syntax
(`X[k] = v`, `X.append(v)`, `setattr(NS, "k", v)`, `vars(NS).update(...)`),
for `contents`: such a name counts by its contents, since the statement's
text is the same whatever it put there.

Pure standard library."""

from __future__ import annotations

import ast

from .changers import MUTATORS
from .inplace import roots, run_now

# id(statement) -> (the statement, what it assigns into): a statement's
# syntax never changes (an edit parses anew), and fingerprinting the steps
# of one module asked again for each of its globals' statements (62,000
# walks of the tree for 18 runs of a test module, 80% of their time).
_assigned: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def assigned_into(stmt: ast.AST, module: str = "") -> frozenset[str]:
    """Names a module-level statement changes in place by its own syntax
    (`X[k] = v`, `X.a = v`, `X += [v]`, `del X[k]`, `X.update(...)`), in
    blocks and loops too, not in the functions and classes it defines:
    not a name it merely passes to a call, which may only read it. A
    `module` named is not changed by a call of its own functions
    (`np.add(a, b)`, `np.sort(a)`), which no list's method is."""
    if module:
        return frozenset(_walked(stmt, module))
    seen = _assigned.get(id(stmt))
    if seen is not None and seen[0] is stmt:
        return seen[1]
    if len(_assigned) >= 4096:  # sources parsed again and again (a notebook)
        _assigned.clear()
    found = frozenset(_walked(stmt))
    _assigned[id(stmt)] = (stmt, found)
    return found


def _walked(stmt: ast.AST, module: str = "") -> set[str]:
    names: set[str] = set()
    for node in run_now(stmt):
        if isinstance(node, (ast.Assign, ast.Delete)):
            for t in node.targets:
                names.update(_roots(t) if isinstance(t, (ast.Subscript, ast.Attribute)) else ())
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            names.update(_roots(node.target) if not isinstance(node.target, ast.Name) else ())
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            of_module = isinstance(node.func.value, ast.Name) and node.func.value.id == module
            names.update(_roots(node.func.value) if node.func.attr in MUTATORS and not of_module else ())
        elif _builtin_call(node, ("setattr", "delattr")):  # `setattr(NS, "k", 2)`: as `NS.k = 2`
            names.update(_roots(node.args[0]))  # type: ignore[attr-defined]
    return names


def _roots(target: ast.AST) -> list[str]:
    """`roots`, with `vars(NS)` standing for NS, whose attributes it holds
    (`vars(NS).update(k=2)`, `vars(NS)["k"] = 2`)."""
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return [node.args[0].id] if _builtin_call(node, ("vars",)) else roots(target)  # type: ignore[attr-defined]


def _builtin_call(node: ast.AST, names: tuple[str, ...]) -> bool:
    """`name(X, ...)` of one of `names`, X a plain name."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
        and bool(node.args) and isinstance(node.args[0], ast.Name)
    )  # fmt: skip
