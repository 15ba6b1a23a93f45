"""Statements that may bind any global of their module, which their text
does not name: `globals()[k] = ...`, `exec(...)`, `vars()`, and a module
taken out of `sys.modules` whose attribute is set
(`setattr(sys.modules[__name__], "K", 3)`). They count for every name
bound elsewhere too (`bindings.ANY`). And statements that bind a name by
imports alone (`imports_alone`).

Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache

from .nodes import children, walk

_ANY_BINDERS = frozenset({"globals", "vars", "exec"})
_BLOCKS = (ast.If, ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@lru_cache(maxsize=8192)  # asked for each name a module's statements may bind
def may_bind_any(stmt: ast.AST) -> bool:
    """Whether `stmt` may bind any name. A `globals()` or `vars(x)` only
    looked in binds none (`globals()[name](...)`, a command line's
    dispatch; `name in globals()`, `globals().keys()`, `for k in globals()`,
    `**vars(args)`): an edit of such a function, notebook cell or
    `__main__` block is no statement of every global. A value taken out of
    it (`globals()[name].append(1)`) may be changed in place, and counts."""
    looks: set[int] = set()
    for sub in walk(stmt):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Subscript):
            looks.add(id(sub.func.value))
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr == "keys":
                looks.add(id(sub.func.value))
        elif isinstance(sub, ast.Compare) and all(
            isinstance(o, (ast.In, ast.NotIn)) for o in sub.ops
        ):
            looks.update(id(c) for c in sub.comparators)
        elif isinstance(sub, ast.keyword) and sub.arg is None:  # `f(**vars(args))`: a copy
            looks.add(id(sub.value))
        elif isinstance(sub, (ast.For, ast.comprehension)):  # `for k in globals()`: names
            looks.add(id(sub.iter))
    return any(
        _names_any(sub) and id(sub) not in looks for sub in walk(stmt)
    ) or _sets_a_module(stmt, looks)


def _sets_a_module(stmt: ast.AST, looks: set[int]) -> bool:
    """Whether `stmt` takes a module out of `sys.modules` and sets an
    attribute (`setattr(sys.modules[__name__], "K", 3)`, `mod.K = 3` after
    `mod = sys.modules[name]`): any global of that module, which the text
    does not name."""
    nodes = list(walk(stmt))
    takes = any(
        isinstance(n, ast.Attribute)
        and n.attr == "modules"
        and getattr(n.value, "id", None) == "sys"
        and id(n) not in looks
        for n in nodes
    )
    return takes and any(
        (isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("setattr", "delattr"))
        or (
            isinstance(n, ast.Attribute)
            and isinstance(n.ctx, (ast.Store, ast.Del))
            and not _own(n.value)
        )
        for n in nodes
    )


def _own(node: ast.AST) -> bool:
    """`self.k = v`, `cls.k = v`: an object's or a class's own, no module."""
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _names_any(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _ANY_BINDERS
    )


def imports_alone(stmt: ast.AST, name: str) -> bool:
    """Whether `stmt` binds `name` by imports alone, also inside `try:` or
    `if` (`try: import numpy as np` / `except ImportError: np = None`), as
    module-level statements it runs, not a lambda's body: else a library's
    module counted by its attributes, numpy's `__all__` in another order in
    each hash seed (every resume across processes was refused). Not where
    anything else there may bind or change it (fail closed): a call
    (`setup()` with `global np`), a store into an object, a definition,
    `except E as np`, `globals()[...]`."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    if not isinstance(stmt, _BLOCKS) or may_bind_any(stmt):
        return False
    constant: set[int] = set()
    for node in _run_now(stmt):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            constant |= {id(t) for t in node.targets}  # `np = None`: no module
        if isinstance(node, (ast.Call, *_DEFS, ast.Global, ast.Nonlocal)):
            return False
        if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            if not isinstance(node, ast.Name) or (node.id == name and id(node) not in constant):
                return False  # `np.k = 1`, `a, b = ...`, `np = load()`, `del np`
        elif not isinstance(node, ast.alias) and name in (getattr(node, "name", None), getattr(node, "rest", None)):
            return False  # `except E as np`, a `case` binding it
    return True


def _run_now(node: ast.AST) -> Iterator[ast.AST]:
    # A lambda's body runs when it is called, not as the statement runs.
    yield node
    for sub in children(node):
        if not (isinstance(node, ast.Lambda) and sub is node.body):
            yield from _run_now(sub)
