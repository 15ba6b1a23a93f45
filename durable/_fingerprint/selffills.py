"""What a method of an object only fills when it is not there yet: a
client made on first use (`self._client = self._client or make()`), a memo
(`if k not in self._memo: self._memo[k] = ...`). A fresh object, in a
resumed run's new process, fills it again alike: no change of its state
(`objectstate`). Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .nodes import walk


def fills(part: ast.Attribute, parents: Mapping[int, ast.AST], me: str) -> bool:
    """Whether the change of `self.a` only fills what is not there yet: a
    binding of `self.a` or `self.a[k]` to `self.a or make()` (`self.a.get(k)
    or ...`), or under a test that it is missing (`if self.a is None:`, `if
    not self.a:`, `if k not in self.a:`), or `self.a.setdefault(k, v)`; not
    `self.a = self.a + [x]` nor `if self.n < 9: self.n = self.n + 1`."""
    above = parents.get(id(part))
    if isinstance(above, ast.Attribute) and above.attr == "setdefault":
        return True
    target: ast.AST = above if isinstance(above, ast.Subscript) and above.value is part else part
    stmt = parents.get(id(target))
    if not (isinstance(stmt, ast.Assign) and stmt.targets == [target]):
        return False
    value = stmt.value
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and _mentions(value.values[0], me, part.attr):
        return True
    node: ast.AST | None = parents.get(id(stmt))
    child: ast.AST = stmt
    while node is not None:
        if isinstance(node, (ast.If, ast.While)) and child in node.body and _missing(node.test, me, part.attr):
            return True
        child = node
        node = parents.get(id(node))
    return False


def _missing(test: ast.expr, me: str, attr: str) -> bool:
    """`self.a is None`, `not self.a`, `k not in self.a`, or one of them
    `and` another test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_missing(t, me, attr) for t in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _mentions(test.operand, me, attr) and isinstance(test.operand, ast.Attribute)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return isinstance(test.left, ast.Attribute) and _mentions(test.left, me, attr)
    return isinstance(test.ops[0], ast.NotIn) and isinstance(test.comparators[0], ast.Attribute) and _mentions(test.comparators[0], me, attr)


def _mentions(expr: ast.AST, me: str, attr: str) -> bool:
    return any(
        isinstance(a, ast.Attribute) and a.attr == attr and isinstance(a.value, ast.Name) and a.value.id == me
        for a in walk(expr)
    )
