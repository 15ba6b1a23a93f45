"""What object a spelled part belongs to: `X[k]`, `X.a`, `X.get(k)`, an
item drawn from it (`next(iter(X.values()))`) are `X`'s, and changing
them changes `X` (`inplace`, `handedwrites`).

Pure standard library."""

from __future__ import annotations

import ast

PARTS = frozenset({"get", "setdefault", "values", "items"})  # give a part, not a copy
# An item of what they are given, or an iterator over its own items: no copy.
_ITEMS = frozenset({"next", "iter", "reversed"})


def roots(target: ast.AST) -> list[str]:
    """`X`, `X[k]`, `X.a.b`, `(X, Y)`, `*X`, `X.get(k).a`: the names whose
    value changes (a part a method returns is no copy)."""
    while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)) or part_call(target):
        target = of(target)
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in roots(e)]
    # The object itself, whichever it is: `(log := LOG).append(x)`, `LOG if x else OTHER`, `LOG or []`.
    either = {ast.NamedExpr: ("target", "value"), ast.IfExp: ("body", "orelse")}.get(type(target), ())
    parts = target.values if isinstance(target, ast.BoolOp) else [getattr(target, a) for a in either]
    return [n for e in parts for n in roots(e)]


def part_call(node: ast.AST) -> bool:
    """`X.get(k)`, `X.values()`, an item drawn from `X` (`next(iter(X))`, whose change changes `X`)."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name):
        return node.func.id in _ITEMS and bool(node.args)
    return isinstance(node.func, ast.Attribute) and node.func.attr in PARTS


def of(part: ast.AST) -> ast.AST:
    """What `X[k]`, `X.a`, `*X`, `X.get(k)`, `next(X)` is a part of: `X`."""
    if isinstance(part, ast.Call):
        return part.args[0] if isinstance(part.func, ast.Name) else part.func.value  # type: ignore[attr-defined]
    whole: ast.AST = part.value  # type: ignore[attr-defined]
    return whole
