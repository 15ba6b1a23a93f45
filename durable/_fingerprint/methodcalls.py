"""Module-level calls of an object's methods (`REGISTRY.register("f", 2)`),
which count for the object they are called on (`bindings` indexes them).

Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from .inplace import BLOCKS, roots

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The key prefix of the statements that only call a name's methods: in
# notebook cells they add to the cell that binds it, never replace it.
CALLS = "()"
# Methods that only show or read their object (`df.head()` in a notebook
# cell, `logger.info(...)`): a call of one changes nothing a step reads.
_LOOKS = frozenset(
    "head tail describe info summary show plot sample get keys values items copy count index "
    "debug warning warn error exception critical log".split()
)


def with_method_calls(index: dict[str, list[ast.AST]], body: list[Any]) -> None:
    """Add to each name's statements in `index` the module-level statements
    that call a method of its object for what the call does, not for its
    value, as a statement of their own (`REGISTRY.register("f", 2)`,
    `REGISTRY.register(2)(f)`, `encoder.fit(LABELS)`, `random.seed(1)`,
    `logger.setLevel(...)`). The method keeps its arguments in the object,
    where no statement that binds the name shows them. A call whose value
    is used (`x = CFG.get("k")`) reads, and so does one of a method that
    only shows its object (`df.head()`, `logger.info(...)`). In an `if
    __name__ == "__main__":` block each statement counts alone: the block's
    other lines (the call of the workflow, an argument parser) decide no
    object's state."""
    for unit in _units(body):
        for name in dict.fromkeys(_method_roots(unit)):
            index.setdefault(CALLS + name, []).append(unit)
            stmts = index.setdefault(name, [])
            if all(s is not unit for s in stmts):
                stmts[:] = sorted([*stmts, unit], key=lambda s: getattr(s, "lineno", 0))


def _object_of(expr: ast.AST) -> list[str]:
    """`X` of `X.m`, `X.m(...)`, `X.a.m(...)(f)`."""
    while isinstance(expr, ast.Call):
        expr = expr.func
    if not isinstance(expr, ast.Attribute) or expr.attr in _LOOKS:
        return []
    return roots(expr.value)


def _units(body: list[Any]) -> Iterator[ast.AST]:
    for stmt in body:
        if _main_guard(stmt):
            yield from _units(stmt.body)
            yield from _units(stmt.orelse)
        else:
            yield stmt


def _main_guard(stmt: ast.AST) -> bool:
    """`if __name__ == "__main__":` (either way round)."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = [test.left, *test.comparators]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _method_roots(stmt: ast.AST) -> Iterator[str]:
    """The names whose methods a statement calls, as it runs, for their
    effect: `X.m(...)` as a statement of its own, in blocks too (not in
    the bodies of the functions and classes it defines, which run when
    called)."""
    if isinstance(stmt, ast.Expr):
        value = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
        if isinstance(value, ast.Call):
            yield from _object_of(value)
        return
    if isinstance(stmt, _DEFS):  # `@REGISTRY.register(2)` counts with the function it holds
        return
    for block in BLOCKS:
        for sub in getattr(stmt, block, None) or ():
            yield from _method_roots(sub)
