"""How module-level statements change an object in place, through its own
name or through another bound to it (`bindings` indexes the statements):
`MODEL = CFG` then `MODEL["k"] = 2`, or `PART = CFG["m"]` then
`PART.append(2)`, change the dict `CFG` names as much as `CFG["k"] = 2`
does, so those statements count for `CFG` too. Pure standard library."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from .callsonly import handed
from .changers import MUTATORS
from .doers import changes_by_making
from .doers import doer as _doer
from .nodes import children, walk
from .parts import PARTS as _PARTS
from .parts import of as _of
from .parts import part_call as _part_call
from .parts import roots as roots  # where its users import it from

# Methods that only show or read their object (`df.head()` in a notebook
# cell, `logger.info(...)`): a call of one changes nothing a step reads.
LOOKS = frozenset(  # ... and `inspect.signature(fetch)`, which reads a step, changes nothing
    "head tail describe info summary show plot sample get keys values items copy count index "
    "debug warning warn error exception critical log signature getsource getsourcelines "
    "getdoc getfile getmodule".split()
)
# Builtins (and IPython's `display`) that only look at what they are given
# (`print(RESULTS)`, `help(fetch)` in a notebook cell must not make a run look
# changed); not those that consume an iterator (`list(IT)`, `next(IT)`): they change it.
READERS = frozenset("print display len repr str ascii format type id hash isinstance int float "
                    "bool abs round help dir callable issubclass".split())  # fmt: skip
BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def in_place(stmt: ast.AST) -> bool:
    """Whether a statement only changes objects in place: `X[k] = v`, `X.a
    += 1`, `del X[k]`, a call as a statement of its own (`X.append(v)`)."""
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Call)
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return False
    return all(isinstance(t, (ast.Subscript, ast.Attribute)) for t in targets)


def called(expr: ast.AST | None, readers: frozenset[str]) -> list[str]:
    """Names the calls in `expr` may change: a name passed to a call
    (`fill(VALUES)`, `filled = fill(VALUES)`), or a part of it (`add(CFG["m"],
    3)`), unless the call only shows it (one of `readers`: `print`; a method
    that shows or reads: `logger.debug("%s", STATS)`), and the object of a changing method
    (`SEEN.append(1)`, `last = SEEN.pop()`)."""
    names: list[str] = []
    for call in walk(expr) if expr is not None else ():
        if not isinstance(call, ast.Call):
            continue
        names += passed(call, readers)
        if isinstance(call.func, ast.Attribute) and call.func.attr in MUTATORS:
            names += roots(call.func.value)
        elif isinstance(call.func, ast.Name) and call.func.id in ("setattr", "delattr") and call.args:
            names += roots(call.args[0])  # `setattr(CFG.model, "k", 2)`, as `CFG.model.k = 2`
    return names


def passed(call: ast.Call, readers: frozenset[str]) -> list[str]:
    """The names a call is given, whole or a part, that it may change: not
    when it only shows them (`print(X)`) or only calls them (`callsonly`)."""
    shows = isinstance(call.func, ast.Attribute) and call.func.attr in LOOKS
    if shows or (isinstance(call.func, ast.Name) and call.func.id in readers):
        return []
    return [n for arg in handed(call, readers) if _given_whole_or_part(arg) for n in roots(arg)]


def _given_whole_or_part(arg: ast.AST) -> bool:
    """`VALUES`, `CFG["m"]`, `CFG.get("m")`, `CFG["m"][0]` passed to a call,
    which may change it in place (`add(CFG["m"], 3)`); not an attribute
    (`logging.INFO`, `os.environ["A"]`: a module's value is no state of
    the module's statements)."""
    while isinstance(arg, ast.Subscript) or _part_call(arg):
        arg = _of(arg)
    return isinstance(arg, ast.Name)


def with_holders(index: dict[str, list[ast.AST]], body: list[Any], readers: frozenset[str]) -> None:
    """Add to each name's statements in `index` those of every name bound to
    its object or a part of it, in turn, when one of those is changed in
    place. A name bound to a part that nothing changes (`step =
    durable.step`) adds nothing: its statements say nothing of the object."""
    holders = aliases_in(body)
    changed = changed_in(body, readers, {n for names in holders.values() for n in names})
    for source in holders:
        seen = {source, *held_by(source, holders, changed)}
        if len(seen) > 1:
            merged = {id(s): s for name in sorted(seen) for s in index.get(name, [])}
            index[source] = sorted(merged.values(), key=lambda s: getattr(s, "lineno", 0))


def aliases_in(body: list[Any]) -> dict[str, set[str]]:
    """name -> the names bound to its object or a part of it."""
    holders: dict[str, set[str]] = {}
    for stmt in body:
        for target, source in _aliases(stmt):
            holders.setdefault(source, set()).add(target)
    return holders


def changed_in(body: list[Any], readers: frozenset[str], names: set[str]) -> set[str]:
    """Those of `names` that statements of `body` change in place."""
    return {n for stmt in body for n in _changes(stmt, readers) if n in names} if names else set()


def held_by(source: str, holders: dict[str, set[str]], changed: set[str]) -> set[str]:
    """The names bound to (a part of) `source`'s object, in turn, when one
    of them is changed in place; else none."""
    seen, todo = {source}, list(holders.get(source, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += holders.get(name, ())
    seen.discard(source)
    return seen if not changed.isdisjoint(seen) else set()


def with_callers(index: dict[str, list[ast.AST]], body: list[Any]) -> None:
    """Add to each name's statements in `index` the module-level statements
    that call, as they run, a function, or make or subclass a class, whose
    statements change it in place (`setup("fast")`, `@register(2)` on a
    `def`, `class Doubler(Plugin, weight=2)`), and the functions that call
    one in their bodies, in turn: their arguments decide what it holds as
    much as the function's code does. A call in a function's body runs
    only when that function is called: a step calling `announce(name)`
    that appends to `EXECUTED` is no statement of `EXECUTED`."""
    calls: dict[int, tuple[set[str], set[str]]] = {}
    for name, stmts in index.items():
        found = callers(name, stmts, body, calls)
        if found:
            merged = {id(s): s for s in [*stmts, *found]}
            stmts[:] = sorted(merged.values(), key=lambda s: getattr(s, "lineno", 0))


def callers(
    name: str, stmts: list[ast.AST], body: list[Any], calls: dict[int, tuple[set[str], set[str]]]
) -> list[ast.AST]:
    """The statements of `body` that call, as they run, one of the functions
    or classes among `stmts` (those that change `name`), and the functions
    calling those, in turn (`with_callers`); `calls` keeps each statement's
    callees."""
    doers = {
        s.name: s for s in stmts
        if isinstance(s, _DEFS) and _doer(s) and s.name != name
        and (not isinstance(s, ast.ClassDef) or changes_by_making(s, name))
    }  # fmt: skip
    if not doers:
        return []
    for s in [*body, *units(body)]:
        if id(s) not in calls:
            calls[id(s)] = _callees(s)
    grown = True
    while grown:  # functions calling a doer in their bodies are doers too
        more = {
            s.name: s for s in body
            if isinstance(s, _DEFS) and s.name not in doers and _doer(s)
            and not doers.keys().isdisjoint(calls[id(s)][1])
        }  # fmt: skip
        doers.update(more)
        grown = bool(more)
    found = [s for s in units(body) if not doers.keys().isdisjoint(calls[id(s)][0])]
    return [*found, *doers.values()] if found else []


def units(body: list[Any]) -> Iterator[ast.AST]:
    """The module-level statements, each statement of an `if __name__ ==
    "__main__":` block on its own: the block's other lines (the call of the
    workflow, an argument parser) decide no object's state."""
    for stmt in body:
        if _main_guard(stmt):
            yield from units(stmt.body)
            yield from units(stmt.orelse)
        else:
            yield stmt


def _main_guard(stmt: ast.AST) -> bool:
    """`if __name__ == "__main__":` (either way round)."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    if not (isinstance(test, ast.Compare) and [type(o) for o in test.ops] == [ast.Eq]):
        return False
    sides = [test.left, *test.comparators]
    named = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    return named and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _callees(stmt: ast.AST) -> tuple[set[str], set[str]]:
    """The names a statement calls as it runs, as decorators or bases too
    (`f(...)`, `@f`, `@f(...)`, `class C(Base)`), and those its functions'
    bodies call. None run for a statement that reads a name it binds itself
    (`out = run(); print(out)` in an `if __name__ == "__main__":` block):
    what it reads differs while it runs and after, which would make a run
    look changed."""
    later = _called_names(walk(stmt)) if isinstance(stmt, _DEFS) else set()
    if _reads_own(stmt):
        return set(), later
    now = _called_names(run_now(stmt))
    for node in run_now(stmt):
        if isinstance(node, _DEFS):
            now.update(d.id for d in node.decorator_list if isinstance(d, ast.Name))
        if isinstance(node, ast.ClassDef):
            now.update(b.id for b in node.bases if isinstance(b, ast.Name))
    return now, later


def _called_names(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


@lru_cache(maxsize=8192)  # asked for each name a module-level statement may change
def run_now(stmt: ast.AST) -> tuple[ast.AST, ...]:
    """The nodes of a statement that run when it runs: not the bodies of the
    functions and classes it defines, only their decorators and bases."""
    found, todo = [], [stmt]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, _DEFS):
            todo += [*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())]
        else:
            todo += children(node)
    return tuple(found)


def _reads_own(stmt: ast.AST) -> bool:
    """Whether a statement reads a name it binds (outside the functions and
    classes it defines: their locals are theirs), save a loop's own
    variable: `for lr in grid: set_lr(lr)` reads `lr` on every pass by
    design, and its calls decide what `set_lr` changes (a cached step
    reading it was served the first pass's output)."""
    names = [n for n in run_now(stmt) if isinstance(n, ast.Name)]
    loops = [n.target for n in run_now(stmt) if isinstance(n, (ast.For, ast.AsyncFor))]
    own = {n.id for t in loops for n in walk(t) if isinstance(n, ast.Name)}
    stored = {n.id for n in names if isinstance(n.ctx, ast.Store)} - own
    return any(n.id in stored for n in names if not isinstance(n.ctx, ast.Store))


def _changes(stmt: ast.AST, readers: frozenset[str]) -> Iterator[str]:
    """Names a module-level statement changes in place: `X[k] = v`, `X.a =
    v`, `X += [v]`, `X.append(v)`, `fill(X)`."""
    yield from called(stmt, readers)
    for node in walk(stmt):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # `REG.register(2)`
            yield from method_object(node.value)
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = [t for t in node.targets if isinstance(t, (ast.Subscript, ast.Attribute))]
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]  # `PART += [2]` extends the list in place
        elif isinstance(node, ast.AnnAssign) and not isinstance(node.target, ast.Name):
            targets = [node.target]
        for target in targets:
            yield from roots(target)


def method_object(expr: ast.AST) -> list[str]:
    """`X` of `X.m`, `X.m(...)`, `X.a.m(...)(f)`."""
    while isinstance(expr, ast.Call):
        expr = expr.func
    if not isinstance(expr, ast.Attribute) or expr.attr in LOOKS:
        return []
    return roots(expr.value)


def _aliases(stmt: Any) -> Iterator[tuple[str, str]]:
    """(name, name whose object it is bound to, or to a part of) for each
    module-level assignment, `for` and `with` target, in blocks too."""
    pairs: list[tuple[Any, ast.AST]] = []
    if isinstance(stmt, ast.Assign):
        pairs = [(t, stmt.value) for t in stmt.targets]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        pairs = [(stmt.target, stmt.value)]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        pairs = [(stmt.target, stmt.iter)]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        pairs = [(i.optional_vars, i.context_expr) for i in stmt.items if i.optional_vars]
    for target, value in pairs:
        for source in _held(value):
            yield from ((name, source) for name in roots(target) if name != source)
    if not isinstance(stmt, _DEFS):
        for block in BLOCKS:
            for sub in getattr(stmt, block, None) or ():
                yield from _aliases(sub)


def _held(value: ast.AST) -> list[str]:
    """Names whose object `value` is, or holds a part of: `CFG`, `CFG["m"]`,
    `CFG.m`, `CFG.get("m")`, `[CFG, OTHER]`."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return _held(value.func.value) if value.func.attr in _PARTS else []
    if isinstance(value, (ast.Tuple, ast.List)):
        return [n for e in value.elts for n in _held(e)]
    if isinstance(value, ast.Dict):
        return [n for e in value.values if e is not None for n in _held(e)]
    if isinstance(value, (ast.Attribute, ast.Subscript, ast.Starred)):
        return _held(value.value)
    return [value.id] if isinstance(value, ast.Name) else []
