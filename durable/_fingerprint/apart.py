"""A log a function only writes, beside the statement that binds a global
it reads (`reads._statement_reads`): a module-level loop that rebinds the
configuration a step reads (`for cfg in CONFIGS: SVC = Svc(cfg)`) and, in
statements of their own, empties the log the step appends to and checks
it, as the peers' test suites count executions. What the statement does to
the log cannot reach the global, so the log counts there by its statements
alone, as where the function reads it (`kept.only_written`).

Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import lru_cache

from .inplace import roots
from .kept import only_written, written_by_defs
from .nodes import children, walk

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def state_only(stmt: ast.AST, bound: str, name: str, found: Iterable[ast.AST], kept: bool) -> bool:
    """Whether `name`, read by `stmt` (one of `found`, the statements binding `bound`),
    is state its code only writes (`written_by_defs`) or, `kept` (the function
    being fingerprinted only writes it too), used there apart from `bound`."""
    return name in written_by_defs(stmt) or (kept and kept_apart(stmt, bound, name, found))


def kept_apart(stmt: ast.AST, bound: str, name: str, found: Iterable[ast.AST]) -> bool:
    """Whether a module-level statement binding `bound` (a loop's `SVC =
    Svc(cfg)`, `main()` setting `CFG["k"] = 2`) uses `name`, a log the
    function only writes, only where it cannot reach `bound`: in a function
    it defines that only writes it too (`LOG.append(x)` in a step the loop
    makes), and in statements of their own that change nothing but it, or
    names made of it (`before = len(LOG)`), and name not `bound`
    (`LOG.clear()`, `print(first, len(LOG))`, `assert len(LOG) == before +
    1`, `COUNTS["compute"] = 0`). Counted by its contents there, the loop's
    reset and reads made the second call of a completed run look changed.
    A copy of it that `bound` is made of (`SNAP = list(LOG)`) counts; so does a
    log beside a function that rebinds `bound` (`found`, its binding
    statements), which a call there may run."""
    defs = (*_FUNCS, ast.ClassDef)
    return all(s is stmt or not isinstance(s, defs) for s in found) and _apart_in(stmt, bound, name)


@lru_cache(maxsize=1024)
def _apart_in(stmt: ast.AST, bound: str, name: str) -> bool:
    made = _made_of(stmt, name)
    return bound not in made and _apart(stmt, bound, made)


def _made_of(stmt: ast.AST, name: str) -> frozenset[str]:
    """`name` and the names `stmt` binds from it, or from those (`before =
    len(LOG)`, `for x in LOG:`, `n = before + 1`), wherever they are bound in it."""
    made, flows = {name}, list(_flows(stmt))
    grew = True
    while grew:
        grew = False
        for targets, value in flows:
            if not set(targets) <= made and any(isinstance(n, ast.Name) and n.id in made for n in walk(value)):
                made |= set(targets)
                grew = True
    return frozenset(made)


def _flows(stmt: ast.AST) -> Iterator[tuple[list[str], ast.AST]]:
    for n in walk(stmt):
        if isinstance(n, ast.Assign):
            yield [r for t in n.targets for r in roots(t)], n.value
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and n.value is not None:
            yield roots(n.target), n.value
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield roots(n.target), n.iter
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            yield roots(n.optional_vars), n.context_expr


def _apart(node: ast.AST, bound: str, made: frozenset[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id not in made
    if isinstance(node, (ast.Expr, ast.Assert, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        inside = list(walk(node))
        targets: list[ast.expr] = [n.target for n in inside if isinstance(n, ast.NamedExpr)]
        if isinstance(node, ast.Assign):
            targets += node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets.append(node.target)
        # Only the log and what is made of it change (`f().k = 0` may change anything).
        others = [t for t in targets if not (roots(t) and set(roots(t)) <= made)]
        if not others and not any(isinstance(n, ast.Name) and n.id == bound for n in inside):
            return True
    parts = children(node)
    if isinstance(node, _FUNCS):
        used = frozenset(n.id for b in node.body for n in walk(b) if isinstance(n, ast.Name) and n.id in made)
        if used <= only_written([node], used):  # its own log; its defaults still count
            parts = [p for p in parts if all(p is not b for b in node.body)]
    return all(_apart(p, bound, made) for p in parts)
