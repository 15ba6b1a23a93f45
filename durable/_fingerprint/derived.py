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
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from .callees import Deferred, Runs
from .fills import (
    Filled,
    changed,
    data,
    filled_by,
    filled_elsewhere,
    filled_through,
    imported_in,
    kept,
    method_bases,
)
from .heads import ANY, EVERYWHERE
from .outside import reads_outside
from .samecode import nested_code
from .source import find_definitions, runs_this_source, source_of
from .stepcodes import reached_names
from .userclasses import new_analysis


class Made(NamedTuple):
    """What a body's names are made from: its cells (the locals functions
    nested in it read) and the globals it stores into or mutates, each
    with the parameters it may be made from (only those made from some)."""

    code: types.CodeType  # held: no id in `nested` is reused while this lives
    cells: Mapping[str, frozenset[str]]
    stored: Mapping[str, frozenset[str]]
    # (first line, last line, parameters) of each statement: what the names
    # it reads are made from; None when the source cannot be read.
    lines: tuple[tuple[int, int, frozenset[str]], ...] | None
    nested: frozenset[int]  # ids of the code defined inside the body
    # the module namespaces each global of `stored` lives in: the body's, or
    # that of a function the body calls that fills it (`configure(xs)`)
    homes: Mapping[str, tuple[Mapping[str, object], ...]]


_KNOWN: dict[int, Made] = {}
_ALL = "<every local>"  # read by `locals()`, `vars()`, `eval(...)`, `exec(...)`
# A cell made by a statement reading the environment or a file (`cfg = json.load(open(p))`):
# no argument tells it, so a function defined in the body counts it by content (`madewith`).
OUTSIDE = "<environment or a file>"
_NESTED = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


def made_in(body: types.FunctionType) -> Made:
    """What `body`'s names are made from (analysed once per code object)."""
    code = body.__code__
    made = _KNOWN.get(id(code))
    if made is None or made.code is not code:
        if len(_KNOWN) >= 1024:
            _KNOWN.clear()
        new_analysis()
        cells, stored, lines, homes = _analyse(body)
        nested = frozenset(id(c) for c in nested_code(code) if c is not code)
        made = _KNOWN[id(code)] = Made(code, cells, stored, lines, nested, homes)
    return made


def made_at(body: types.FunctionType, line: int) -> frozenset[str]:
    """The parameters of `body` that its statement running at `line` reads,
    or the locals it reads are made from (`total = make_total(sorted(xs))`:
    `xs`); every parameter when the source cannot be read."""
    lines = made_in(body).lines
    around = [(b - a, params) for a, b, params in lines or () if a <= line <= b]
    if not around:  # no source, or no statement there: it cannot be told
        return _parameters(body.__code__)
    return min(around, key=lambda pair: pair[0])[1]


def read_from_body(
    fn: types.FunctionType, body: types.FunctionType, held: Iterable[object] = ()
) -> frozenset[str]:
    """The parameters of `body` that `fn` may compute from: through the
    body's locals it reads (a function nested in the body, at any depth),
    and through the globals the body fills (`CONFIG["xs"] = xs`, or a
    function it calls does: `configure(xs)`) that `fn`'s code names, in
    any module (by name, errs towards more), or holds (`held`: its
    closure's values) or names under another name (`from settings import
    CONFIG as CFG`) the object of."""
    made = made_in(body)
    code, found = fn.__code__, set[str]()
    if made.cells and code.co_freevars and id(code) in made.nested:
        found.update(*(made.cells[v] for v in code.co_freevars if v in made.cells))
    if made.stored:
        # What the user's functions it calls name counts too (`helper(x)` reading `FACTOR`).
        names, values, untold = reached_names(fn)
        found.update(*(made.stored[g] for g in (made.stored.keys() if untold else names & made.stored.keys())))
        if ANY in made.stored and any(h is fn.__globals__ or h is EVERYWHERE for h in made.homes[ANY]):
            found.update(made.stored[ANY])  # `globals()[key] = ...`: any of its module's
        objects = filled_objects(made)
        found.update(*(objects[id(v)] for v in [*held, *values] if id(v) in objects))
    return frozenset(found)


def filled_objects(made: Made) -> dict[int, frozenset[str]]:
    """id -> parameters, of the objects the filled globals hold now (not a
    number or a string: one of those is seen by name only)."""
    objects: dict[int, frozenset[str]] = {}
    for name, params in made.stored.items():
        for home in made.homes.get(name, ()):
            value = home.get(name)
            if value is not None and type(value) not in _SCALARS and data(name, home):
                objects[id(value)] = objects.get(id(value), frozenset()) | params
    return objects


_SCALARS = frozenset({bool, int, float, complex, str, bytes})


_Lines = tuple[tuple[int, int, frozenset[str]], ...]
_Homes = dict[str, tuple[Mapping[str, object], ...]]
_Found = tuple[dict[str, frozenset[str]], dict[str, frozenset[str]], _Lines | None, _Homes]


def _analyse(fn: types.FunctionType) -> _Found:
    try:
        return _analysed(fn)
    except Exception:  # a body read in a way not foreseen: fail closed, any global
        return _unknown(fn, callees=False)


def _unknown(fn: types.FunctionType, *, callees: bool = True) -> _Found:
    """Every cell, every global the body names that holds data (and those
    the functions it names fill; without `callees`, any of its module's) may
    be made from every parameter."""
    code, ns = fn.__code__, fn.__globals__
    params = _parameters(code)
    every = sorted({n for c in nested_code(code) for n in c.co_names})  # comprehensions' too: `[LOG.append(v) for v in xs]`
    some: Filled = [(n, ns) for n in every if data(n, ns)]
    some += ([(ANY, ns)] if "globals" in every else []) + ([] if callees else [(ANY, EVERYWHERE)])
    if callees:
        names = [ast.Name(id=n, ctx=ast.Load()) for n in every]
        some += [pair for n in names for pair in (*filled_by(n, ns), *filled_through(n, ns))]
    unknown = dict.fromkeys(code.co_cellvars, params | {OUTSIDE})
    return _only_made(unknown), _only_made({n: params for n, _ in some}), None, _homes_of(some)


def _analysed(fn: types.FunctionType) -> _Found:
    code = fn.__code__
    params = _parameters(code)
    own = {*code.co_varnames, *code.co_cellvars}
    src = source_of(code.co_filename, fn.__globals__)
    nodes = find_definitions(code, src)
    if len(nodes) != 1 or not runs_this_source(code, src, fn.__globals__):
        return _unknown(fn)
    node = nodes[0]
    edges: dict[str, set[str]] = {}
    units: list[tuple[int, int, frozenset[str]]] = []
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else [node]
    checked = code.co_filename  # `runs_this_source` just passed

    imported = {k: v for stmt in body for k, v in imported_in(stmt, fn.__globals__).items()}  # `import setup; setup.run()`

    def outside(nodes: list[ast.AST]) -> bool:
        return reads_outside(nodes, fn.__globals__, checked, None, imported)

    _statements(body, frozenset(), edges, units, outside)
    # `eval("f(xs)")`, `fill(**locals())`: what they read the text does not spell
    edges = {name: reads | own if _ALL in reads else reads for name, reads in edges.items()}
    units = [(a, b, reads | own if _ALL in reads else reads) for a, b, reads in units]
    # Only the body's own names carry its values from one statement to the
    # next: `durable.suspend(...)` under `if not ready:` does not make every
    # local that a step decorated `@durable.step` reads depend on `ready`.
    out, own_o = params | {OUTSIDE}, own | {OUTSIDE}  # in cells and globals, not `lines`' arguments
    inner = {name: reads & own_o for name, reads in edges.items() if name in own}
    cells = {cell: frozenset(_reached(cell, inner) & out) for cell in code.co_cellvars}
    strong, classes = changed(body, calls=False), method_bases(body)
    # a function's own locals fill no global (`def apply(s): out = s`), unless
    # the body names a global of that name itself (`global LIMIT; LIMIT = n`)
    nested = {n for c in nested_code(code) if c is not code for n in (*c.co_varnames, *c.co_cellvars)}
    locals_all = own | (nested - set(code.co_names))
    stored = {  # a global of the module the body stores into or mutates
        name: _made_of(reads & own_o, inner) & out
        for name, reads in edges.items()
        if name not in locals_all and kept(name, fn.__globals__, strong, classes)
    }
    lines = tuple((a, b, _made_of(reads & own, inner) & params) for a, b, reads in units)

    def made_at(runs: Runs) -> frozenset[str]:  # what the statements there read is made from
        if runs is None:
            return out
        reads = frozenset().union(*(r for a, b, r in units if a <= runs[0] <= b or a <= runs[1] <= b))
        return _made_of(reads & own_o, inner) & out

    deferred = Deferred(body)
    for node in deferred.nodes:  # what a function defined in the body stores into
        for name in changed([node]) - locals_all:
            if kept(name, fn.__globals__, strong, classes):
                made = frozenset().union(*(made_at(runs) for runs in deferred.runs_of(node))) & params
                stored[name] = stored.get(name, frozenset()) | made
    filled: Filled = [(name, fn.__globals__) for name in stored]
    for name, home, runs in filled_elsewhere(body, fn.__globals__, params, deferred):
        stored[name] = stored.get(name, frozenset()) | made_at(runs)
        filled.append((name, home))
    return _only_made(cells), _only_made(stored), lines, _homes_of(filled)


def _homes_of(filled: Iterable[tuple[str, Mapping[str, object]]]) -> _Homes:
    homes: dict[str, list[Mapping[str, object]]] = {}
    for name, home in filled:
        if not any(h is home for h in homes.setdefault(name, [])):
            homes[name].append(home)
    return {name: tuple(found) for name, found in homes.items()}


def _made_of(names: Iterable[str], inner: Mapping[str, set[str]]) -> frozenset[str]:
    return frozenset(set().union(*(_reached(n, inner) for n in names)))


def _only_made(names: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    return {name: params for name, params in names.items() if params}


def _parameters(code: types.CodeType) -> frozenset[str]:
    varargs = bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return frozenset(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount + varargs])


def _statements(
    body: Iterable[ast.AST],
    control: frozenset[str],
    edges: dict[str, set[str]],
    units: list[tuple[int, int, frozenset[str]]],
    outside: Callable[[list[ast.AST]], bool],
) -> None:
    """Record, for each name a statement may change, the names it reads and
    the names of the conditions and loops around it (OUTSIDE when it reads
    the environment or a file); and the lines of each statement (of a
    compound one, its header) with the names it reads."""
    for stmt in body:
        if isinstance(stmt, _NESTED):
            header = [getattr(stmt, f) for f in ("test", "iter", "target") if hasattr(stmt, f)]
            header += getattr(stmt, "items", [])
            last = max([stmt.lineno, *(getattr(n, "end_lineno", 0) or 0 for n in header)])
            # `with open(path) as f:`, `for line in open(path):`
            inner = control | _read(header) | ({OUTSIDE} if outside(header) else set())
            header += getattr(stmt, "handlers", [])  # `except E as e` binds e
            inner |= _read(getattr(stmt, "handlers", []))
            _link(changed(header), inner, edges)
            units.append((stmt.lineno, last, inner))
            for part in ("body", "orelse", "finalbody"):
                _statements(getattr(stmt, part, []), inner, edges, units, outside)
            for handler in getattr(stmt, "handlers", []):
                _statements(handler.body, inner, edges, units, outside)
        else:  # a simple statement, or one handled whole (a nested def, `match`)
            read = control | _read([stmt]) | ({OUTSIDE} if outside([stmt]) else set())
            _link(changed([stmt]), read, edges)
            first = getattr(stmt, "lineno", 0)
            given = _given_to_loop_over(stmt)
            read = read if given is None else _read(given)
            units.append((first, getattr(stmt, "end_lineno", None) or first, read))


def _given_to_loop_over(stmt: ast.AST) -> list[ast.AST] | None:
    """The functions a statement gives to `loop_over` (`loop_over(make_scale(
    factors), items)`), None when it calls none: what such a function is
    made of is what its expression reads, not the items beside it (a
    changed item would make every item's digest change)."""
    given: list[ast.AST] = []
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and _called_name(sub.func) == "loop_over":
            given += sub.args[:1] + [k.value for k in sub.keywords if k.arg == "fn"]
    return given or None


def _called_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


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
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and _reads_all(sub.func.id, sub):
                names.add(_ALL)
    return frozenset(names)


def _reads_all(name: str, call: ast.Call) -> bool:
    return name in ("eval", "exec") or (name in ("locals", "vars") and not call.args)


def _reached(name: str, edges: Mapping[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(edges.get(current, ()))
    return seen
