"""Which names a function's closure holds only to change them: the state it
keeps (`nonlocal calls; calls += 1`, `seen[k] = v`, `log.append(x)`), as
opposed to values it computes from. DESIGN §3: program state that changes
because the program ran must not make a run look changed, so such a cell
does not count in the function's fingerprint; its value is not what the
function's output depends on (a counter a step bumps, the way the peers'
test suites count executions).

Decided from the function's source, checked against its running code as
its fingerprint is. When that cannot be done (no source, an edited file,
two definitions on one line), or when the code can read its variables
without naming them (`locals()`, `vars()`, `eval`, a frame's `f_locals`),
no name is kept state: every cell counts (fail closed). A name read
anywhere in any other way is an input."""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, TypeVar

from .canon import is_our_decorator, name_chains
from .effects import effect_only, fed_back, shows
from .nodes import children, walk
from .source import find_definitions, runs_this_source, source_of

# Methods whose call, as a statement of its own (its result unused), only
# changes the object it is called on. Not those that fail on what it holds
# (`pop`, `popitem`, `popleft`, `remove`, `put_nowait` on a full queue):
# `try: PENDING.remove(x) except ValueError: return "gone"` computes from it.
_MUTATORS = frozenset({
    "add", "append", "appendleft", "clear", "discard", "extend", "extendleft",
    "insert", "put", "setdefault", "update", "write", "writelines",
})  # fmt: skip
# How code reads its own variables without naming them: the builtins
# (`"{last}".format(**locals())` reads a cell no `ast.Name` loads), and a
# frame, however it is reached. (`model.eval()` is no such read.)
_UNNAMED_READS = frozenset({"locals", "vars", "eval", "exec", "currentframe", "_getframe"})
_FRAME_READS = frozenset({"currentframe", "_getframe", "f_locals", "f_back"})
T = TypeVar("T")
_NOTHING: frozenset[str] = frozenset()
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_KNOWN: dict[int, tuple[types.CodeType, frozenset[str]]] = {}
_FILLED: dict[int, tuple[types.CodeType, frozenset[str]]] = {}
_Above = tuple[ast.AST | None, ast.AST | None, ast.AST | None]  # parent, its parent, theirs


def kept_state(fn: Any, code: types.CodeType) -> frozenset[str]:
    """The names among `code.co_freevars` (fn's code) that it only writes."""
    if not code.co_freevars:
        return _NOTHING
    return by_code(_KNOWN, code, lambda: _analyse(fn, code))


def self_filled(fn: Any, code: types.CodeType) -> frozenset[str]:
    """The names among `code.co_freevars` that fn's body writes into (a
    memo, `instances[cls] = cls()`, read back too): what such a cell holds
    the function put there from its own calls, state it keeps, which fills
    on the first call. Not a cell it stores its arguments in as they came
    (`registered[name] = cls` of `plugin(name, cls=None)`): that holds what
    its callers hand it (plugins registering at import), a registry whose
    contents count. None known when its source cannot be read."""
    if not code.co_freevars:
        return _NOTHING
    return by_code(_FILLED, code, lambda: _made_by_calls(fn, code, _analyse(fn, code, any)))


def _made_by_calls(fn: Any, code: types.CodeType, names: frozenset[str]) -> frozenset[str]:
    """Those of `names` into which fn's one definition never stores a parameter
    of its own, but outside a call (`cls` of `reg[k] = cls`, `reg.append(cls)`,
    `reg[k] = (cls, k)`; not `cls` of `instances[cls] = cls()`), nor what it
    makes from a parameter other than the key (`reg[name] = cls()`)."""
    src = source_of(code.co_filename, getattr(fn, "__globals__", None)) if names else None
    nodes = find_definitions(code, src) if src is not None and src.tree is not None else []
    if len(nodes) != 1 or not isinstance(nodes[0], _FUNCS):
        return _NOTHING
    args = nodes[0].args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    stored: set[str] = set()
    for node in walk(nodes[0]):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            keys = [t.slice for t in targets if isinstance(t, ast.Subscript)]
            into, values = [_container(t) for t in targets], [node.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            given = [*node.args, *(k.value for k in node.keywords)]
            keys, values = (given[:1], given[1:]) if node.func.attr == "setdefault" else ([], given)
            into = [_container(node.func)]
        else:
            continue
        # A memo's value is made by its key (`instances[cls] = cls()`) or by what the
        # function holds (`instances[cls] = cls(*args)` of a closure's `cls`); one
        # holding another argument, made by it or handed to what keeps it
        # (`registered[name] = cls()`, `partial(cls)`, `lambda: cls()`),
        # is what a caller handed.
        keyed = {n.id for k in keys for n in ast.walk(k) if isinstance(n, ast.Name)}
        makers = keyed | set(code.co_freevars)
        if any(_passes(v, params) or _handed(v, params - keyed, makers) for v in values):
            stored.update(n for n in into if n)
    return names - stored


def _handed(value: ast.AST, params: set[str], makers: set[str]) -> bool:
    """Whether `value` holds one of `params` anywhere, save as an argument
    of a call the key or a closure cell makes (`cls(*args)` of a singleton)."""
    if isinstance(value, ast.Name):
        return value.id in params
    if isinstance(value, ast.Call) and _callee(value.func) in makers:
        return False
    return any(_handed(c, params, makers) for c in ast.iter_child_nodes(value))


def _callee(func: ast.AST) -> str:
    """The name a call's chain starts from (`cls` of `cls()`, `cls.create()`)."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else ""


def _container(target: ast.AST) -> str:
    """The name `reg` of `reg[k]`, `reg.attr`, `reg.append`; "" for another target."""
    return target.value.id if isinstance(target, (ast.Subscript, ast.Attribute)) and isinstance(target.value, ast.Name) else ""


def _passes(value: ast.AST, params: set[str]) -> bool:
    """Whether `value` holds a parameter as it came: outside any call."""
    if isinstance(value, ast.Name):
        return value.id in params
    return not isinstance(value, (ast.Call, ast.Lambda)) and any(_passes(c, params) for c in ast.iter_child_nodes(value))


def by_code(table: dict[int, tuple[types.CodeType, T]], code: types.CodeType, compute: Callable[[], T]) -> T:
    """What `compute` found for `code`, found once: by code object, as what
    code does with a name cannot change. By identity (the entry holds it):
    two functions of the same name, line and body in two files have equal
    code objects, and the module around each is not the other's."""
    known = table.get(id(code))
    if known is None or known[0] is not code:
        if len(table) > 4096:
            table.clear()
        known = table[id(code)] = (code, compute())
    return known[1]


def _analyse(fn: Any, code: types.CodeType, which: Callable[[Iterable[bool]], bool] = all) -> frozenset[str]:
    globs = getattr(fn, "__globals__", None)
    src = source_of(code.co_filename, globs)
    if src.tree is None or not runs_this_source(code, src, globs):
        return _NOTHING
    return only_written(find_definitions(code, src), frozenset(code.co_freevars), which)


def only_written(
    nodes: list[ast.AST], wanted: frozenset[str], which: Callable[[Iterable[bool]], bool] = all, shown: bool = False
) -> frozenset[str]:
    """The names among `wanted` that the one definition in `nodes` (its
    body) only writes: its closure's cells, or the globals it appends its
    calls to (`LOG.append(x)`), whose contents then count for it neither
    (`contents_part`) when the module also changes them (`LOG.clear()`).
    `which=any`: those it writes at least once (`self_filled`). `shown`:
    a use only shown is no read either (`shown_only`)."""
    if len(nodes) != 1 or _reads_unnamed(nodes[0]):
        return _NOTHING
    quiet = shown_only(nodes[0]) if shown else frozenset()
    written: dict[str, list[bool]] = {}
    for name, above in _uses(nodes[0], wanted):
        written.setdefault(name.id, []).append(id(name) in quiet or _writes(name, *above))
    return frozenset(n for n, uses in written.items() if which(uses))


# A logger's methods: called as a statement of its own, what they are handed only goes to the log.
_LOGGING = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})


def shown_only(fn: ast.AST) -> frozenset[int]:
    """The names used only to be shown: in what a statement of its own
    hands to `print` (to the terminal: `effects.shows`) or to a logger's method
    (`log.info("calls=%d", STATS["calls"])`, `print("took", sum(TIMES))`),
    whose result nothing uses; not one bound there (`print(n := LOG[0])`).
    Nor one only pacing it or deciding whether to show (`effects`: a rate
    limiter's `self.last`, `warn_once`'s `_WARNED`), nor one read only
    into its own new value (`fed_back`: `self.last = max(now, self.last + gap)`)."""
    found: set[int] = set(effect_only(fn)) | fed_back(fn)
    for stmt in walk(fn):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or not (shows(call) or (isinstance(call.func, ast.Attribute) and call.func.attr in _LOGGING)):
            continue
        inner = [n for a in (*call.args, *(k.value for k in call.keywords)) for n in walk(a)]
        if not any(isinstance(n, ast.NamedExpr) for n in inner):
            found.update(id(n) for n in inner if isinstance(n, ast.Name))
    return frozenset(found)


@lru_cache(maxsize=1024)
def attributes_kept(nodes: tuple[ast.AST, ...]) -> frozenset[tuple[str, ...]]:
    """The attribute chains the one definition in `nodes` rebinds itself
    (`Cls.runs += 1`, `Cls.peak = max(Cls.peak, n)`, `del Cls.last`): the
    state it keeps on a class, which counts by the class's statements as a
    global it rebinds with `global` does, not by its value now (each call
    moves it: a completed run called again looked changed). DBOS's suites
    count executions so, in static-method steps."""
    if len(nodes) != 1 or _reads_unnamed(nodes[0]):
        return frozenset()
    found: set[tuple[str, ...]] = set()
    for node in walk(nodes[0]):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            found.update(c for c in name_chains(target) if len(c) > 1 and _stored(target, c))
    return frozenset(found)


def _stored(target: ast.AST, chain: tuple[str, ...]) -> bool:
    """Whether `target` stores into `chain` itself (`Cls.runs`), not into
    something it holds (`Cls.runs[k]`, `Cls.cfg.rate`) or reads (`x[Cls.k]`)."""
    parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    for part in parts:
        names = list(name_chains(part))  # the whole chain comes first: `a.b.c`, then its prefixes
        if isinstance(part, ast.Attribute) and names and names[0] == chain:
            return True
    return False


def _reads_unnamed(fn: ast.AST) -> bool:
    """Whether fn (or a function in it) may read its variables without
    naming them (`_UNNAMED_READS`)."""
    for node in walk(fn):
        if isinstance(node, ast.Name) and node.id in _UNNAMED_READS:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _FRAME_READS:
            return True
    return False


def _uses(fn: ast.AST, wanted: frozenset[str]) -> list[tuple[ast.Name, _Above]]:
    """Each use of a wanted name in fn's body, with the three nodes above
    it. Decorators, defaults and annotations run in the enclosing scope."""
    body = getattr(fn, "body", [])
    roots: list[ast.AST] = [body] if isinstance(body, ast.AST) else list(body)
    found: list[tuple[ast.Name, _Above]] = []
    stack: list[tuple[ast.AST, _Above]] = [(r, (None, None, None)) for r in roots]
    while stack:
        node, above = stack.pop()
        if isinstance(node, ast.Name) and node.id in wanted:
            found.append((node, above))
        below = (node, above[0], above[1])
        stack.extend((child, below) for child in children(node))
    return found


def _writes(name: ast.Name, parent: ast.AST | None, grand: ast.AST | None, great: ast.AST | None) -> bool:
    """Whether this use only changes what the name holds. A nested
    function's own variable of that name counts as a use of the cell (as an
    input, when read): never less strict."""
    if isinstance(name.ctx, (ast.Store, ast.Del)):
        return True  # `nonlocal n; n = ...`, `n += 1`
    if not isinstance(parent, (ast.Subscript, ast.Attribute)) or parent.value is not name:
        return False
    if isinstance(parent.ctx, (ast.Store, ast.Del)):
        return True  # `seen[k] = v`, `seen[k] += 1`, `state.calls += 1`
    return (  # `calls.append(x)` as a statement of its own
        isinstance(parent, ast.Attribute)
        and parent.attr in _MUTATORS
        and isinstance(grand, ast.Call)
        and grand.func is parent
        and isinstance(great, ast.Expr)
    )


@lru_cache(maxsize=1024)
def written_by_defs(stmt: ast.AST) -> frozenset[str]:
    """The names the methods of a `class` statement (or a `def`'s own body)
    only write (`COUNTS["scale"] += 1`, `LOG.append(x)` in a helper method a
    step calls), which no other part of it names: state its code keeps, as a
    step function's is (`read_names`), not what any output is computed
    from. Read through the class (a method step's `self`, a body naming the
    class, an object of it given to a step), such a log counted by its
    contents once a module-level statement handed it to a call
    (`json.dumps(COUNTS)`) or ran a method writing it: each call made the
    next look changed, and a cached step given the object never hit."""
    if not isinstance(stmt, (ast.ClassDef, *_FUNCS)):
        return _NOTHING
    inner = stmt.body if isinstance(stmt, ast.ClassDef) else [stmt]
    defs = [s for s in inner if isinstance(s, _FUNCS)]
    inside = {id(n) for s in defs for n in walk(s)}
    named = {n.id for n in walk(stmt) if isinstance(n, ast.Name) and id(n) not in inside}
    written: set[str] = set()
    for fn in defs:
        names = frozenset(n.id for n in walk(fn) if isinstance(n, ast.Name))
        only = only_written([fn], names)
        written |= only
        named |= names - only  # read by one method: an input of it
    return frozenset(written - named)


def attributes_kept_by_steps(stmt: ast.AST) -> frozenset[str]:
    """The attributes the step methods of a `class` statement rebind on
    their class (`Counted.runs += 1`, `cls.runs += 1`: `attributes_kept`)
    and no part of it reads otherwise (`self.runs`, `max(Counted.peak, n)`,
    `getattr(self, "runs")`): a count the steps keep, which a module-level
    reset (`Counted.runs = 0`, as DBOS's tests do) does not make an input
    of the class's code (`code._class_statement`)."""
    if not isinstance(stmt, ast.ClassDef):
        return _NOTHING
    steps = [s for s in stmt.body if isinstance(s, _FUNCS) and any(map(is_our_decorator, s.decorator_list))]
    owners = (stmt.name, "cls")
    kept = {c[-1] for s in steps for c in attributes_kept((s,)) if len(c) == 2 and c[0] in owners}
    nodes = list(walk(stmt))
    read = {n.attr for n in nodes if isinstance(n, ast.Attribute) and not isinstance(n.ctx, (ast.Store, ast.Del))}
    read |= {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return frozenset(kept - read)

