"""Module-level calls of an object's methods (`REGISTRY.register("f", 2)`),
which count for the object they are called on (`bindings` indexes them).

Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from .canon import is_our_decorator
from .doers import doer as _doer
from .inplace import BLOCKS, method_object, units
from .nodes import walk

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The key prefix of the statements that only call a name's methods: in
# notebook cells they add to the cell that binds it, never replace it.
CALLS = "()"


def with_method_calls(index: dict[str, list[ast.AST]], body: list[Any]) -> None:
    """Add to each name's statements in `index` the module-level statements
    that call a method of its object for what the call does, not for its
    value, as a statement of their own (`REGISTRY.register("f", 2)`,
    `REGISTRY.register(2)(f)`, `encoder.fit(LABELS)`, `random.seed(1)`,
    `logger.setLevel(...)`) or as a decorator: the method keeps its
    arguments in the object, where no statement that binds the name shows
    them. A call whose value is used (`x = CFG.get("k")`) reads, and so
    does one of a method that only shows its object (`df.head()`,
    `logger.info(...)`). In an `if __name__ == "__main__":` block each
    statement counts alone (`units`)."""
    imported = {a.asname or a.name.partition(".")[0] for s in body for a in _imports(s)}
    for unit in units(body):
        found = _method_roots(unit, imported) if not isinstance(unit, _DEFS) else _defined(unit, imported)
        for name in dict.fromkeys(found):
            index.setdefault(CALLS + name, []).append(unit)
            stmts = index.setdefault(name, [])
            if all(s is not unit for s in stmts):
                stmts[:] = sorted([*stmts, unit], key=lambda s: getattr(s, "lineno", 0))


def _defined(stmt: ast.AST, imported: set[str]) -> list[str]:
    """For a `def` or `class`: the objects its decorators call a method of
    (`@REGISTRY.register("alpha", 2)`; not ours, nor a module's:
    `@functools.cache`, `@durable.step` would make every step a statement
    of `durable`), those its function's body calls methods of, and those
    its class body does."""
    decorators = getattr(stmt, "decorator_list", [])
    theirs = [d for d in decorators if not is_our_decorator(d)]
    found = [n for d in theirs for n in method_object(d) if n not in imported]
    return [*found, *_called_in(stmt, imported), *_in_class_body(stmt, imported)]


def _in_class_body(stmt: ast.AST, imported: set[str]) -> Iterator[str]:
    """For a `class`: the objects its body calls methods of, which runs when
    the class is made, as a module's statements do (`class Plugin:
    REGISTRY.register("plugin", 1)`), in nested classes too."""
    for sub in stmt.body if isinstance(stmt, ast.ClassDef) else ():
        if isinstance(sub, ast.ClassDef):
            yield from _in_class_body(sub, imported)
        else:
            yield from _method_roots(sub, imported)


def _called_in(fn: ast.AST, imported: set[str]) -> Iterator[str]:
    """The globals a function (not a step: what one changes is the
    program's state) calls methods of in statements of its own, so that a
    module-level call of it (`setup(2)` of a `setup` calling
    `REGISTRY.register("f", w)`) counts as the method call would. Not a
    module's (`os.makedirs(out)` in any function would count for every
    step reading `os.path`), nor its own variables'."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _doer(fn):
        return
    own = {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for a in walk(fn) if isinstance(a, ast.arg)}
    for stmt in walk(fn):
        if isinstance(stmt, ast.Expr) and not isinstance(stmt, _DEFS):
            yield from (n for n in _method_roots(stmt, imported) if n not in own and n not in imported)


def _imports(stmt: ast.AST) -> list[ast.alias]:
    """What the module-level imports of `stmt` bind (in blocks too)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return list(stmt.names)
    if isinstance(stmt, _DEFS):
        return []
    return [a for b in BLOCKS for s in getattr(stmt, b, None) or () for a in _imports(s)]


def _method_roots(stmt: ast.AST, imported: set[str]) -> Iterator[str]:
    """The names whose methods a statement calls, as it runs, for their
    effect: `X.m(...)` as a statement of its own, in blocks too (not in
    the bodies of the functions and classes it defines, which run when
    called), and one whose value the statement uses (`print(model.fit(X))`,
    `fitted = model.fit(X)`: it may change its object all the same), save
    a module's or an imported object's (`path = os.path.join(...)` would
    count for every step reading `os`) and a chain's."""
    if isinstance(stmt, _DEFS):  # `_defined`
        return
    if isinstance(stmt, ast.Expr):
        value = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
        if isinstance(value, ast.Call):
            yield from method_object(value)
    yield from _written_through(stmt)
    for field, node in ast.iter_fields(stmt):
        if field in BLOCKS:
            continue
        for sub in node if isinstance(node, list) else [node]:
            inner = list(walk(sub)) if isinstance(sub, ast.AST) else []
            # Not a chain (`df.groupby("a").sum()`), as for a statement of its own.
            chained = {id(n.value) for n in inner if isinstance(n, ast.Attribute)}
            for call in inner:
                if isinstance(call, ast.Call) and id(call) not in chained:
                    yield from (n for n in method_object(call) if n not in imported)
    for block in BLOCKS:
        for sub in getattr(stmt, block, None) or ():
            yield from _method_roots(sub, imported)


def _written_through(stmt: ast.AST) -> Iterator[str]:
    """`X` of an assignment into what a method of X returns
    (`decimal.getcontext().prec = 5`, `logging.getLogger("a").level = 10`):
    it changes an object X holds, as the call `X.m(...)` as a statement of
    its own may, a module's too."""
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
    for target in targets if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else ():
        node = target
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
            if isinstance(node, ast.Call):
                yield from method_object(node)
                break
