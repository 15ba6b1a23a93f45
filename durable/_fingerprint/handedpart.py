"""The part of a module-level statement whose reads count for a global
it hands to calls, or of a function whose body changes it
(`reads._statement_reads`). Pure standard library."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from functools import lru_cache

from .inplace import BLOCKS, READERS, passed, roots
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
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _made_part(stmt, name)
    if not isinstance(stmt, ast.Expr):
        return stmt
    every = [c for c in walk(stmt) if isinstance(c, ast.Call)]
    calls = [c for c in every if name in passed(c, READERS)]
    # And a call of what those return (`apply(COUNTS)(rate)`, `wrap(COUNTS).update(rate)`).
    inner = {id(c) for c in calls}
    calls += [c for c in every if id(c) not in inner and any(id(n) in inner for n in walk(c.func))]
    return ast.Module(body=[ast.Expr(c) for c in calls], type_ignores=[]) if calls else stmt


# What a function body reads every local and global through: it is read whole.
_ANY_NAME = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Assert)
_HEADS = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)


def _made_part(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.AST:
    """For a function whose body changes `name` (`def main(): CFG["k"] = 2`,
    then `LOG.clear()`, the workflow's calls and `print(LOG)`): the `def`
    with the statements of its body that `name` may be made from (each
    whole, with the blocks it is in), its decorators and defaults; the rest
    (a log the steps fill, emptied and shown) is no input of `name`. Erring
    towards more: a statement that stores into, changes or hands to a call
    a name joins every name it and the conditions and loops around it read,
    both ways (`c = CFG`, then `c["k"] = len(LOG)`: `LOG` counts); a
    function, class or lambda defined in the body joins all it names;
    `globals()`, `vars()`, `eval`, `exec`: the whole `def`. Read whole, `LOG`
    counted by its contents, and the second call of a script's completed
    run was refused as changed."""
    if any(isinstance(n, ast.Name) and n.id in _ANY_NAME for n in walk(fn)):
        return fn
    units = [(top, unit) for top in fn.body for unit in _units([top], ())]
    joined: dict[str, set[str]] = {}
    # What decides a `return` or `raise` above: whether the rest runs (in a loop, the
    # statement the loop is in is kept whole, with what decides a `break`).
    leaving: frozenset[str] = frozenset()
    for _, (changed, read, leaves) in units:
        read = read | leaving if changed else read
        leaving = leaving | read if leaves else leaving
        for n in changed:
            joined.setdefault(n, set()).update(changed | read)
        for n in read:
            joined.setdefault(n, set()).update(changed)
    reach, todo = {name}, [name]
    while todo:
        for n in joined.get(todo.pop(), ()):
            if n not in reach:
                reach.add(n)
                todo.append(n)
    kept = {id(top): top for top, (changed, _, _) in units if changed & reach}
    part = copy.copy(fn)
    part.body = list(kept.values()) or [ast.Pass()]
    return part


def _units(body: list[ast.stmt], around: tuple[ast.AST, ...]) -> Iterator[tuple[frozenset[str], frozenset[str], bool]]:
    """(the names a statement may change, the names it and the headers of the blocks
    around it read, whether it leaves the function or its loop), for each simple
    statement of `body` in order, at any depth of its blocks."""
    for stmt in body:
        if isinstance(stmt, _HEADS):
            head = [getattr(stmt, f) for f in ("test", "iter", "subject") if getattr(stmt, f, None) is not None]
            head += [i for item in getattr(stmt, "items", ()) for i in (item.context_expr, item.optional_vars) if i]
            target = getattr(stmt, "target", None)
            inner = (*around, *head)
            if target is not None:  # `for x in LOG:`: x is made from LOG
                yield _changed([target]), _read(inner), False
            for block in BLOCKS:
                for part in getattr(stmt, block, ()) or ():
                    if isinstance(part, (ast.ExceptHandler, ast.match_case)):
                        extra = [x for x in (getattr(part, "type", None), getattr(part, "guard", None)) if x]
                        yield from _units(part.body, (*inner, *extra))
                    else:
                        yield from _units([part], inner)
        else:
            yield _changed([stmt]), _read((stmt, *around)), isinstance(stmt, _LEAVES)


def _changed(nodes: list[ast.AST]) -> frozenset[str]:
    """What a statement may change: names it stores into or deletes (the root of
    `X[k] = v`, `X.a = v`), the object of a method it calls, what it hands to a call,
    and everything a function, class or lambda it defines names."""
    found: set[str] = set()
    for node in (n for top in nodes for n in walk(top)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            found.update(_read((node,)) | {getattr(node, "name", "")})
        elif isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)) and isinstance(
            getattr(node, "ctx", None), (ast.Store, ast.Del)
        ):
            found.update(roots(node))
        elif isinstance(node, ast.Call):
            found.update(passed(node, READERS))
            found.update(roots(node.func.value) if isinstance(node.func, ast.Attribute) else ())
    return frozenset(found - {""})


def _read(nodes: tuple[ast.AST, ...]) -> frozenset[str]:
    return frozenset(n.id for top in nodes for n in walk(top) if isinstance(n, ast.Name))
