"""The part of a module-level statement whose reads count for a global
it hands to calls (`reads._statement_reads`). Pure standard library."""

from __future__ import annotations

import ast
from functools import lru_cache

from .inplace import READERS, passed
from .nodes import walk


@lru_cache(maxsize=1024)
def handed_part(stmt: ast.AST, name: str) -> ast.AST:
    """For an expression statement that is one of `name`'s only because it
    hands `name` to calls (`print(first, wf(1), json.dumps(COUNTS),
    results)`): those calls, callee and arguments (`json.dumps(COUNTS)`),
    whose reads decide what may happen to it; the rest only shows values.
    Read whole, the statement counted `results`, which the script fills
    with the workflow's outputs, and the second call of the workflow was
    refused as changed. Any other statement whole (it binds, or changes
    `name` by a method: `COUNTS.clear()`)."""
    if not isinstance(stmt, ast.Expr):
        return stmt
    every = [c for c in walk(stmt) if isinstance(c, ast.Call)]
    calls = [c for c in every if name in passed(c, READERS)]
    # And a call of what those return (`apply(COUNTS)(rate)`, `wrap(COUNTS).update(rate)`).
    inner = {id(c) for c in calls}
    calls += [c for c in every if id(c) not in inner and any(id(n) in inner for n in walk(c.func))]
    return ast.Module(body=[ast.Expr(c) for c in calls], type_ignores=[]) if calls else stmt
