"""Which functions and classes a module-level call of them counts for
(`inplace.callers`): what they change in place is changed by the statement
calling them. Not a step or workflow, whose changes are the program's state
as it runs; not a class only through its steps, which making an object of
it does not run. Pure standard library."""

from __future__ import annotations

import ast

from .nodes import walk

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def doer(stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    """A function or class whose calls count for what it changes: not a
    step or workflow (`@durable.step`, `@workflow(...)`), whose changes are
    the program's state as it runs (a step filling `RESULTS`)."""
    for deco in stmt.decorator_list:
        deco = deco.func if isinstance(deco, ast.Call) else deco
        named = deco.attr if isinstance(deco, ast.Attribute) else getattr(deco, "id", None)
        if named in ("step", "workflow"):
            return False
    return True


def changes_by_making(stmt: ast.ClassDef, name: str) -> bool:
    """Whether making an object of the class (`one = Worker(2)`) may change
    `name`: the class names it outside its steps. A counter its step
    methods bump (`COUNTS["scale"] += 1`) is theirs: counted as changed by
    `Worker(2)`, it counted by its contents, and each call of the step made
    the next look changed (a cache never hit, a completed run refused)."""
    steps = {id(n) for s in stmt.body if isinstance(s, _FUNCS) and not doer(s) for n in walk(s)}
    return any(isinstance(n, ast.Name) and n.id == name and id(n) not in steps for n in walk(stmt))
