"""Which of a workflow's parameters each local of its body may be made from.

Pure standard library. A step defined in the body reads the body's locals
through its closure (`ys = sorted(xs)`, then `def total(): return
sum(ys)`). The fingerprint counts a list or an object there by its type
(program state), so a resume given another `xs` replayed the sum of the old
one. A local made from parameters computes from them as the step's own
arguments would: the engine counts those parameters as arguments of the
call (`_core.bound`).

The answer errs towards more parameters, never fewer: a statement that
stores into a name, mutates it (`ys.append(x)`, `ys[i] = x`) or passes it
to a call (which may mutate it) makes the name depend on every name the
statement reads, and on the conditions and loops it is nested in. A body
whose source cannot be read makes every local depend on every parameter.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Mapping

from .source import find_definitions, nested_code, runs_this_source, source_of

# A body's code -> (the code, what each of its cells is made from, the ids of
# the code nested in it); the entry holds the code, so no id is reused while
# the entry lives.
_Known = tuple[types.CodeType, Mapping[str, frozenset[str]], frozenset[int]]
_KNOWN: dict[int, _Known] = {}
_NESTED = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def read_from_body(code: types.CodeType, body: types.FunctionType) -> frozenset[str]:
    """The parameters of `body` that a function with `code`, nested in it
    (at any depth), may compute from through the body's locals it reads."""
    outer = body.__code__
    if not code.co_freevars or not outer.co_cellvars:
        return frozenset()
    known = _KNOWN.get(id(outer))
    if known is None or known[0] is not outer:
        if len(_KNOWN) >= 1024:
            _KNOWN.clear()
        nested = frozenset(id(c) for c in nested_code(outer) if c is not outer)
        known = _KNOWN[id(outer)] = (outer, _analyse(body), nested)
    if id(code) not in known[2]:
        return frozenset()
    made = known[1]
    return frozenset().union(*(made[v] for v in code.co_freevars if v in made))


def _analyse(fn: types.FunctionType) -> Mapping[str, frozenset[str]]:
    code = fn.__code__
    params = frozenset(code.co_varnames[: _arity(code)])
    src = source_of(code.co_filename, fn.__globals__)
    nodes = find_definitions(code, src)
    if len(nodes) != 1 or not runs_this_source(code, src, fn.__globals__):
        return {cell: params for cell in code.co_cellvars}  # unknown: from every parameter
    node = nodes[0]
    edges: dict[str, set[str]] = {}
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else [node]
    _statements(body, frozenset(), edges)
    # Only the body's own names carry its values from one statement to the
    # next: `durable.suspend(...)` under `if not ready:` does not make every
    # local that a step decorated `@durable.step` reads depend on `ready`.
    own = {*code.co_varnames, *code.co_cellvars}
    edges = {name: reads & own for name, reads in edges.items() if name in own}
    return {cell: frozenset(_reached(cell, edges) & params) for cell in code.co_cellvars}


def _arity(code: types.CodeType) -> int:
    varargs = bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_argcount + code.co_kwonlyargcount + varargs


def _statements(body: Iterable[ast.AST], control: frozenset[str], edges: dict[str, set[str]]) -> None:
    """Record, for each name a statement may change, the names it reads and
    the names of the conditions and loops around it."""
    for stmt in body:
        if isinstance(stmt, _NESTED):
            header = [getattr(stmt, f) for f in ("test", "iter", "target") if hasattr(stmt, f)]
            header += getattr(stmt, "items", [])
            header += getattr(stmt, "handlers", [])  # `except E as e` binds e
            inner = control | _read(header)
            _link(_changed(header), inner, edges)
            for part in ("body", "orelse", "finalbody"):
                _statements(getattr(stmt, part, []), inner, edges)
            for handler in getattr(stmt, "handlers", []):
                _statements(handler.body, inner, edges)
        else:  # a simple statement, or one handled whole (a nested def, `match`)
            _link(_changed([stmt]), control | _read([stmt]), edges)


def _link(changed: set[str], read: frozenset[str], edges: dict[str, set[str]]) -> None:
    for name in changed:
        edges.setdefault(name, set()).update(read)


def _read(nodes: Iterable[ast.AST]) -> frozenset[str]:
    names: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                names.update(sub.names)
    return frozenset(names)


def _changed(nodes: Iterable[ast.AST]) -> set[str]:
    """The names these statements may store into or mutate."""
    names: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                names.add(sub.id)
            elif isinstance(sub, (ast.Attribute, ast.Subscript)) and not isinstance(sub.ctx, ast.Load):
                names.add(_base(sub))
            elif isinstance(sub, ast.Call):  # `ys.append(x)`, `fill(ys)`: either may mutate ys
                names.add(_base(sub.func))
                names.update(_base(a) for a in (*sub.args, *(k.value for k in sub.keywords)))
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                names.update(sub.names)
            elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                names.add(sub.name)
            elif isinstance(sub, ast.MatchMapping) and sub.rest:
                names.add(sub.rest)
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                names.add(sub.name)
            elif isinstance(sub, ast.alias):
                names.add((sub.asname or sub.name).split(".")[0])
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
    names.discard("")
    return names


def _base(node: ast.AST) -> str:
    """The name an expression's chain starts from (`ys` of `ys.items()[0]`), or ""."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return node.id if isinstance(node, ast.Name) else ""


def _reached(name: str, edges: Mapping[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(edges.get(current, ()))
    return seen
