"""What a function reads only to pace itself or to decide whether to show
something: a value that reaches nothing but `time.sleep` (a rate limiter's
`delay = self.last + self.interval - time.monotonic()`, then `if delay > 0:
time.sleep(delay)`), or the test of an `if` whose branches only show
(`print`, a logger's method, `warnings.warn`), sleep, return nothing from a
function that returns nothing, or set the state they test (`warn_once`'s
`if msg in _WARNED: return` before `_WARNED.add(msg); warnings.warn(msg)`).
What the function returns and the other values it leaves depend on no such
read: a replay in a new process, where the state is as the import left it,
only sleeps or warns otherwise (durable vouches for values, never for
timing or what a terminal shows). A read flowing anywhere else (`return
delay`, `self.waited += delay`, a branch raising or changing other state)
is a read. Pure standard library, from the text (`kept.shown_only`)."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import NamedTuple

from .nodes import walk

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOGGING = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
_SLEEPS = frozenset({("time", "sleep"), ("asyncio", "sleep")})
_WARNS = frozenset({("warnings", "warn")})
# What a test may call: it reads, changes nothing (the clock too).
_PURE = frozenset({"len", "isinstance", "min", "max", "abs", "monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"})
# What a branch may do to the state its test reads (`_WARNED.add(msg)`).
_SETS = frozenset({"add", "append", "update", "setdefault", "discard"})


@lru_cache(maxsize=1024)
def effect_only(fn: ast.AST) -> frozenset[int]:
    """The ids of the names `fn` uses only to pace or to guard what it shows
    (the module's docstring); none when it may read its variables otherwise
    (`:=`)."""
    if not isinstance(fn, _FUNCS) or not any(isinstance(n, ast.Expr) and _effect_call(n.value) for n in walk(fn)):
        return frozenset()  # most functions: nothing shown, nothing slept on
    if any(isinstance(n, (ast.NamedExpr, *_FUNCS, ast.Lambda)) for n in walk(fn) if n is not fn):
        return frozenset()
    valued = any((isinstance(n, ast.Return) and n.value is not None) or isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk(fn))
    declared = frozenset(n for g in walk(fn) if isinstance(g, (ast.Global, ast.Nonlocal)) for n in g.names)
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    own = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | {n.id for n in walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    # The state a branch may change: `self.seen`, a global's; not a local the result may be made of.
    kept = (frozenset(own) - declared, params[0] if params else "")
    paced = _paced_locals(fn, _Ctx(fn.body, declared, frozenset(), valued, kept))
    ctx = _Ctx(fn.body, declared, paced, valued, kept)
    found: set[int] = set()
    for node in walk(fn):
        if isinstance(node, ast.Expr) and _effect_call(node.value):
            found.update(_names(node.value))
        elif isinstance(node, ast.Assign) and _bound(node) in paced:
            found.update(_names(node.value))
    for block in _blocks(fn):
        for stmt in block:
            if isinstance(stmt, ast.If) and _guards(stmt, block, ctx):
                found.update(_names(stmt.test))
    return frozenset(found)


@lru_cache(maxsize=1024)
def fed_back(fn: ast.AST) -> frozenset[int]:
    """The ids of the names whose read in `fn` goes only into the value
    bound to that same name or attribute (`self.last = max(now, self.last
    + self.gap)`, `_LAST = max(now, _LAST + GAP)` under `global _LAST`): a
    rate limiter's schedule, `+=` spelled out, which reads nothing another
    step wrote either. Through operators and the builtins whose result is
    made of what they are handed (`_SAME`) alone: any other call may keep
    or hand on what it is given. A read elsewhere (`return self.last`,
    `self.slot = self.last`) is a read."""
    found: set[int] = set()
    for node in walk(fn):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) or (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            found.update(_same_reads(node.value, _root(target)))
    return frozenset(found)


def _same_reads(node: ast.AST, root: str) -> set[int]:
    if isinstance(node, (ast.Name, ast.Attribute)) and _root(node) == root and isinstance(node.ctx, ast.Load):
        return {id(node.value if isinstance(node, ast.Attribute) else node)}
    inner: list[ast.AST] = []
    if isinstance(node, ast.Call):
        func = node.func
        inner = [*node.args, *(k.value for k in node.keywords)] if isinstance(func, ast.Name) and func.id in _SAME else []
    elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
        inner = list(ast.iter_child_nodes(node))
    return {i for child in inner for i in _same_reads(child, root)}


# Builtins whose result is made of what they are handed alone, keeping none of it.
_SAME = frozenset({"max", "min", "abs", "round", "float", "int"})


class _Ctx(NamedTuple):
    top: list[ast.stmt]  # the function's body: a bare `return` there skips the rest of it
    declared: frozenset[str]  # `global _ONCE`: a name a branch may set
    paced: frozenset[str]  # the locals only effects use
    valued: bool  # whether the function returns a value anywhere (or yields)
    own: tuple[frozenset[str], str]  # its locals (parameters too), and its first parameter


def _paced_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef, ctx: _Ctx) -> frozenset[str]:
    """The locals bound once per statement (`delay = ...`) whose every read
    is in what an effect is handed, in an `if` guarding only effects, or in
    the value of another such local: on and on, until none drops out."""
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    stores = [n for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))]
    simple = {id(a.targets[0]) for a in walk(fn) if isinstance(a, ast.Assign) and len(a.targets) == 1}
    cands = {n.id for n in stores} - params - ctx.declared
    cands -= {n.id for n in stores if id(n) not in simple}  # a loop's target, a tuple unpacked, `+=`
    parents = {id(c): p for p in walk(fn) for c in ast.iter_child_nodes(p)}
    blocks = {id(s): b for b in _blocks(fn) for s in b}
    while True:
        now = ctx._replace(paced=frozenset(cands))
        dropped = {
            n.id for n in walk(fn)
            if isinstance(n, ast.Name) and n.id in cands and isinstance(n.ctx, ast.Load)
            and not _harmless(n, parents, blocks, now)
        }  # fmt: skip
        if not dropped:
            return frozenset(cands)
        cands -= dropped


def _harmless(n: ast.AST, parents: dict[int, ast.AST], blocks: dict[int, list[ast.stmt]], ctx: _Ctx) -> bool:
    node: ast.AST = n
    while (up := parents.get(id(node))) is not None:
        if isinstance(up, ast.Expr) and _effect_call(up.value):
            return True
        if isinstance(up, ast.Assign) and node is up.value:
            return _bound(up) in ctx.paced
        if isinstance(up, ast.If) and node is up.test and id(up) in blocks:
            return _guards(up, blocks[id(up)], ctx)
        if isinstance(up, ast.stmt):
            return False
        node = up
    return False


def _guards(stmt: ast.If, block: list[ast.stmt], ctx: _Ctx) -> bool:
    """Whether `if` statement `stmt` (in `block`) decides only effects: a
    test calling nothing but what reads (`len`, the clock), branches of
    effects alone, changing only the state the test names. A branch ending
    in a bare `return`, in the function's own body of a function returning
    nothing, also guards the rest of it, which must be so too."""
    if not _pure(stmt.test):
        return False
    own, me = ctx.own
    state = frozenset(r for r in _roots_in(stmt.test) if r.partition(".")[0] not in own or (r.startswith(f"{me}.") and me))
    branches = [stmt.body, stmt.orelse]
    if any(b and isinstance(b[-1], ast.Return) for b in branches):
        if block is not ctx.top or ctx.valued or any(b and isinstance(b[-1], ast.Return) and b[-1].value for b in branches):
            return False
        branches = [b[:-1] if b and isinstance(b[-1], ast.Return) else b for b in branches]
        branches.append(block[block.index(stmt) + 1 :])
    return all(_effects(s, state, ctx) for b in branches for s in b)


def _effects(stmt: ast.stmt, state: frozenset[str], ctx: _Ctx) -> bool:
    """Whether `stmt` only shows, sleeps, binds a paced local, or changes the
    state `state` names (a global only where declared: `global _ONCE`)."""
    if isinstance(stmt, (ast.Pass, ast.Global, ast.Nonlocal)):
        return True
    if isinstance(stmt, ast.Expr):
        call = stmt.value
        if _effect_call(call):
            return True
        func = call.func if isinstance(call, ast.Call) else None
        return isinstance(func, ast.Attribute) and func.attr in _SETS and _root(func.value) in state
    if isinstance(stmt, (ast.Assign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if isinstance(stmt, ast.Assign) and _bound(stmt) in ctx.paced:
            return True
        return all(_root(t) in state and (not isinstance(t, ast.Name) or t.id in ctx.declared) for t in targets)
    if isinstance(stmt, ast.If):
        return _pure(stmt.test) and all(_effects(s, state, ctx) for s in [*stmt.body, *stmt.orelse])
    return False


def _effect_call(node: ast.AST) -> bool:
    """`time.sleep(d)`, `await asyncio.sleep(d)`, `print(...)` to the
    terminal, `warnings.warn(...)`, `log.info(...)`: what it is handed goes
    to no value."""
    node = node.value if isinstance(node, ast.Await) else node
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return shows(node)
    if not isinstance(func, ast.Attribute):
        return False
    pair = (func.value.id if isinstance(func.value, ast.Name) else "", func.attr)
    return pair in _SLEEPS or pair in _WARNS or func.attr in _LOGGING


def shows(call: ast.Call) -> bool:
    """Whether `call` prints to the terminal: `print(...)`, to no `file=`
    or to `sys.stdout` or `sys.stderr` (a token count shown at the end);
    not to a file, where what it writes is data."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "print"):
        return False
    to = next((k.value for k in call.keywords if k.arg == "file"), None)
    return to is None or (isinstance(to, ast.Attribute) and to.attr in ("stdout", "stderr") and isinstance(to.value, ast.Name) and to.value.id == "sys")


def _pure(test: ast.expr) -> bool:
    for n in walk(test):
        if isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, ast.Call):
            func = n.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name not in _PURE:
                return False
    return True


def _roots_in(test: ast.expr) -> frozenset[str]:
    """What a test reads, by the chain it starts from: `_WARNED`, `self._warned`."""
    return frozenset(r for n in walk(test) if isinstance(n, (ast.Name, ast.Attribute)) and (r := _root(n)))


def _root(node: ast.AST) -> str:
    """`self.last` of `self.last`, `self.seen[k]`; `_WARNED` of `_WARNED[k]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _bound(stmt: ast.Assign) -> str:
    target = stmt.targets[0] if len(stmt.targets) == 1 else None
    return target.id if isinstance(target, ast.Name) else ""


def _names(node: ast.AST) -> set[int]:
    return {id(n) for n in walk(node) if isinstance(n, ast.Name)}


def _blocks(fn: ast.AST) -> list[list[ast.stmt]]:
    """Every list of statements in `fn`: its body, each branch's."""
    found: list[list[ast.stmt]] = []
    for node in walk(fn):
        for part in ("body", "orelse", "finalbody"):
            block = getattr(node, part, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found.append(block)
        found += [h.body for h in getattr(node, "handlers", [])]
    return found
