"""Functions that only call what they are given: `def call(f, *a): return
f(*a)` in a notebook, then a cell `call(fetch)`. Handing `fetch` to such a
function changes it no more than `fetch()` at module level does (a call of
a name is no change of it), so that argument does not make the statement
one of `fetch`'s. Any other use of the parameter (`f.k = 2`, `return f`,
`g(f)`) and the argument counts, as for any call (`inplace.passed`).

An entry `name:i` (the i-th positional argument) or `name=p` (keyword
`p`) joins the `readers` the indexing of statements is given. Pure
standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from .nodes import walk

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Builtins that only call the function they are given (`sorted(xs, key=fetch)`),
# unless the module binds the name itself.
_BUILTINS = {"map": {"map:0"}, "filter": {"filter:0"}, "sorted": {"sorted=key"},
             "min": {"min=key"}, "max": {"max=key"}}  # fmt: skip


def only_calling(body: Iterable[ast.stmt], index: Mapping[str, list[ast.AST]]) -> frozenset[str]:
    """The `name:i` / `name=p` entries of the functions of `body` that only
    call that parameter. Fail closed: a function bound by anything but
    undecorated `def`s (an import, `f = ...`, a decorator, `f.__code__ =
    ...`) or by statements that may bind any name has none, and with
    several `def`s (cells) a parameter must qualify in each of them."""
    if index.get("?"):  # `globals()[k] = ...`: anything may be bound, `map` too
        return frozenset()
    found = {name: entries for name, entries in _BUILTINS.items() if name not in index}
    for stmt in body:
        if isinstance(stmt, _DEFS) and _plain_def(stmt.name, index):
            mine = _called_params(stmt)
            found[stmt.name] = found[stmt.name] & mine if stmt.name in found else mine
    return frozenset(entry for entries in found.values() for entry in entries)


def handed(call: ast.Call, readers: frozenset[str]) -> list[ast.expr]:
    """The arguments of `call` it may change: those the function only calls
    (an entry of `readers`) left out."""
    name = call.func.id if isinstance(call.func, ast.Name) else None
    if name is None or not any(r.startswith((f"{name}:", f"{name}=")) for r in readers):
        return [*call.args, *(k.value for k in call.keywords)]
    given: list[ast.expr] = []
    for i, arg in enumerate(call.args):
        # After a `*xs`, positions are unknown.
        starred = any(isinstance(a, ast.Starred) for a in call.args[: i + 1])
        if starred or f"{name}:{i}" not in readers:
            given.append(arg)
    given += [k.value for k in call.keywords if k.arg is None or f"{name}={k.arg}" not in readers]
    return given


def calls_any(body: Iterable[ast.stmt], calls_only: frozenset[str]) -> bool:
    """Whether `body` calls one of the functions of `calls_only` anywhere."""
    named = {e.partition(":")[0].partition("=")[0] for e in calls_only}
    calls = (n for stmt in body for n in walk(stmt) if isinstance(n, ast.Call))
    return bool(named) and any(isinstance(c.func, ast.Name) and c.func.id in named for c in calls)


def _plain_def(name: str, index: Mapping[str, list[ast.AST]]) -> bool:
    stmts = index.get(name, [])
    return bool(stmts) and all(
        isinstance(s, _DEFS) and s.name == name and not s.decorator_list for s in stmts
    )


def _called_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """`fn:i` and `fn=p` for each parameter `p` its body (defaults and
    annotations apart) names only to call it (`p(...)`), or not at all."""
    args = fn.args
    nodes = [n for stmt in fn.body for n in walk(stmt)]
    callees = {id(n.func) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    other = {n.id for n in nodes if isinstance(n, ast.Name) and id(n) not in callees}
    entries: set[str] = set()
    for i, a in enumerate([*args.posonlyargs, *args.args]):
        if a.arg not in other:
            entries.add(f"{fn.name}:{i}")
            if i >= len(args.posonlyargs):
                entries.add(f"{fn.name}={a.arg}")
    entries |= {f"{fn.name}={a.arg}" for a in args.kwonlyargs if a.arg not in other}
    return entries


def calls_of(stmt: ast.AST, name: str) -> bool:
    """Whether `stmt` names `name` only to call it or one of its methods
    (`inner.runs()`, `fetch.__wrapped__(2)`, `fetch(3)`), at least once:
    of a workflow or a step, which its methods do not change, no change."""
    uses = [n for n in walk(stmt) if isinstance(n, ast.Name) and n.id == name]
    funcs = [c.func for c in walk(stmt) if isinstance(c, ast.Call)]
    called = {id(f) for f in funcs if isinstance(f, ast.Name)}
    called |= {id(f.value) for f in funcs if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)}
    return bool(uses) and all(id(n) in called for n in uses)
