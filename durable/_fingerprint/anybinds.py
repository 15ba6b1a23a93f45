"""Statements that may bind any name of their module (`globals()[k] =
...`, `exec(...)`, `vars()`): they count for every name (`bindings`).

Pure standard library."""

from __future__ import annotations

import ast

_ANY_BINDERS = frozenset({"globals", "vars", "exec"})


def may_bind_any(stmt: ast.AST) -> bool:
    """Whether `stmt` may bind any name. A `globals()` or `vars(x)` only
    looked in binds none (`globals()[name](...)`, a command line's
    dispatch; `name in globals()`, `globals().keys()`, `for k in globals()`,
    `**vars(args)`): an edit of such a function, notebook cell or
    `__main__` block is no statement of every global. A value taken out of
    it (`globals()[name].append(1)`) may be changed in place, and counts."""
    looks: set[int] = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Subscript):
            looks.add(id(sub.func.value))
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr == "keys":
                looks.add(id(sub.func.value))
        elif isinstance(sub, ast.Compare) and all(isinstance(o, (ast.In, ast.NotIn)) for o in sub.ops):
            looks.update(id(c) for c in sub.comparators)
        elif isinstance(sub, ast.keyword) and sub.arg is None:  # `f(**vars(args))`: a copy
            looks.add(id(sub.value))
        elif isinstance(sub, (ast.For, ast.comprehension)):  # `for k in globals()`: names
            looks.add(id(sub.iter))
    return any(_names_any(sub) and id(sub) not in looks for sub in ast.walk(stmt))


def _names_any(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _ANY_BINDERS
    )
