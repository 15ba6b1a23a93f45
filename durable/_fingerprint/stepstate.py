"""The module-level names a step changes that another step or a workflow
reads (`state_written`), or that its own next call reads back
(`state_reread`): a replay cannot redo the change (`_core.written`).
What a function reads that others change is `stateread`'s. A class counts as such a
value: written by name (`Cfg.mode = m`) or by its own method through
`cls`, `type(self)` or `self.__class__`; read where an attribute written is
read, by name or, in a method of the class, through `self` or `cls`.

Pure standard library. Found by the text: once per code object (what code does with
a name cannot change), and once per parsed module for what its functions change.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from . import stepreach
from .canon import is_our_decorator
from .changers import LOGS, MUTATORS
from .heldobjects import held_methods, only_called
from .heldreads import held_helpers, reached_held, unread
from .helperreads import helper_readers, helper_writes
from .hiddenrng import called_again, hidden_state, same_generator
from .imports import library_module
from .kept import by_code
from .nodes import walk
from .objectstate import calls_change_nothing, object_writes
from .reach import is_durable
from .selffills import filled_from_module, memo_only
from .source import find_definitions, runs_this_source, source_of
from .stepreach import ANY, UNNAMED, aliases, helpers, hidden_writes, local_names, methods, reached
from .written import drawn_in, method, written_in

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WRITTEN: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_LOGGED: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_REREAD: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}
_Def = tuple[ast.AST, frozenset[str], "str | None"]  # a step or workflow, the names it uses, its class
_DEFS: dict[int, tuple[ast.AST, list[_Def]]] = {}


def state_written(fn: Any) -> tuple[str, ...]:
    """The globals `fn` writes (`STATE[k] = v`, `global RATE`) that the code
    of another step or workflow of its module reads (not only writes: a
    counter every step bumps is their own state); () when its source cannot
    be read. A replayed step does not redo that write, so a resumed run
    would go on with the value the import left."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ()
    return by_code(_WRITTEN, code, lambda: _written_read(fn, code, logs=False))


def state_logged(fn: Any) -> tuple[str, ...]:
    """The globals `fn` only counts or logs in (`CALLS["put"] += 1`,
    `LOG.append(x)`) that the code of another step or workflow of its
    module reads (`" ".join(LOG)`); () when its source cannot be read. A
    replay does not redo the append either, but a later step's appends
    change the log since (an equal value cannot vouch for it): only the
    process that made the record, where the log holds the append, replays it."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ()
    # What its own next call reads back (`state_reread`) counts by process too, as a log
    # does: in this process the object holds each earlier call's write, however many.
    return by_code(_LOGGED, code, lambda: tuple(sorted({*_written_read(fn, code, logs=True), *_reread_only(fn)})))


def _reread_only(fn: Any) -> set[str]:
    """What `fn`'s next call reads back that no other step reads (those count by content)."""
    return set(state_reread(fn)) - set(state_written(fn))


def state_reread(fn: Any) -> tuple[str, ...]:
    """The globals, and the cells of its closure, that `fn` writes and its
    own code reads back (`ACC.append(x); return list(ACC)`, `nonlocal n; n
    += 1; return n`, `MEMORY.remember(x)` returning `self.seen`), when the
    step may be called again in a run (`hiddenrng.called_again`): a replay
    of one call leaves them as the import made them, and the next call,
    live, computes on what they lack (`[2]` where an uninterrupted run
    gives `[1, 2]`). Not one only written (a log it never reads), nor a
    memo only filled (`if k not in C: C[k] = f(k)`, a factory's `cache =
    {}` too: a fresh process fills it alike, each entry made by its key
    alone); () for a step called once."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ()
    return by_code(_REREAD, code, lambda: tuple(sorted({*_written_read(fn, code, False, True), *_written_read(fn, code, True, True)})))


def _written_read(fn: Any, code: types.CodeType, logs: bool, itself: bool = False) -> tuple[str, ...]:
    """Those of the globals `fn` writes (`logs`: only those it counts or
    logs in) that another step or workflow of its module reads; `itself`:
    that its own code reads, and the cells of its closure, when called again."""
    globs = getattr(fn, "__globals__", None)
    src = source_of(code.co_filename, globs)
    if src.tree is None or not runs_this_source(code, src, globs):
        return ()
    own = find_definitions(code, src)
    # What it writes through a plain function it calls, or a call (`setattr(Cfg, ...)`,
    # `globals()[k]`, `registry()[k]`), is written too; and through a method of a class of
    # the module that is no step, called by the class's name (`Cfg.configure("fast")`).
    plain = held_helpers(own, src.tree, globs or {})  # `TOOLS[name](x)` of a registry too
    called = methods([*own, *plain], src.tree)
    via = [*plain, *(m for _, m in [*called, *held_methods([*own, *plain], globs or {})])]
    through = {c for c, m in called if _changes_own_class(m, *_first_of(m), logs=False)}
    # Not the locals (`out[k] = v`), nor the cells of its closure (`state[k]
    # = v` on a dict a factory made): no module-level value another step reads;
    # but its own next call does (`itself`).
    theirs = {*code.co_varnames, *code.co_cellvars, *([] if itself else code.co_freevars)}
    selves = (_selves(globs or {}), str((globs or {}).get("__name__", "")))  # `import flow as me; me.LOG.append(x)`
    written = (written_in(own, False, globs) | hidden_writes(own, src.tree, *selves) | _through_class(fn, own, globs, logs=False)) - theirs
    written |= {n for d in own for g in walk(d) if itself and isinstance(g, ast.Nonlocal) for n in g.names}  # `nonlocal n; n = n + 1`
    written |= through | ((written_in(via, False, globs) | hidden_writes(via, src.tree, *selves)) - local_names(via))
    written |= (theirs_too := helper_writes([*own, *plain], globs or {}, False, src.tree))  # `helpers.log(x)`, another module's
    objects = {n: a for n, a in object_writes([*own, *plain], globs or {}).items() if ANY not in written and (n not in written or only_called(n, [*own, *via]))}
    written |= objects.keys()  # `MEMORY.remember(x)`: told by what its methods change, read
    if logs:
        logged = (written_in(own, True, globs) | _through_class(fn, own, globs, logs=True)) - theirs
        logged |= helper_writes([*own, *plain], globs or {}, True, src.tree)
        written = (logged | (written_in(via, True, globs) - local_names(via))) - written
    written -= {n for n in written - objects.keys() - theirs_too if calls_change_nothing(n, [*own, *via], globs or {})}  # `DB.insert(rows)`
    if not written:
        return ()
    mine = {id(d) for d in own}
    # A step reads what a plain function it calls reads, and a name bound to what it names
    # (`C = Cfg`, `def mode(): return Cfg.mode`); one reading names by string (`globals()["K"]`),
    # or through its module importing itself (`import flow; flow.LOG`), any.
    unnamed = UNNAMED | _selves(globs or {})
    others = [
        (d, names, seen | written if seen & unnamed else seen, owner)
        for d, names, owner in _durable_defs(src.tree, own if itself else []) if (id(d) in mine) is itself
        for seen in [reached_held(names, src.tree, globs or {})]
    ]  # fmt: skip
    direct = written - {ANY}
    if ANY in written:  # a name the text does not spell: any the others read
        written = direct | {n for _, _, seen, _ in others for n in seen if n in (globs or {})}
    written |= aliases(written, globs) | same_generator(written, globs or {})  # `rnd` of `from random import random as rnd`
    # Another module's helper it calls (`helpers.describe()`), told by the object it reads.
    ours = [d for d, _, _, _ in others]
    elsewhere = helper_readers([*ours, *helpers(ours, src.tree)], globs or {}, frozenset(written - {ANY}))
    others, foreign = others + [(d, n, n, o) for d, n, o in elsewhere], {id(d) for d, _, _ in elsewhere}
    read = {n for d, _, seen, _ in others if written & seen for n in (written & seen) - stepreach.written_only(d, src.tree, written, id(d) in foreign, globs)}
    read -= unread({n: a for n, a in objects.items() if n in read}, others, foreign, src.tree, globs or {})
    # A memo or lazy client only filled, here alone (`if k not in CACHE: CACHE[k] = ...`): filled again alike.
    cells = frozenset(code.co_freevars) if itself else frozenset()  # a memo a factory made: `cache = {}` in it
    read = {n for n in read if n in theirs_too or any(n in x for d, _, x, _ in others if id(d) in foreign)
            or not memo_only(_factory_body(src.tree, own) if n in cells else src.tree, n)}  # fmt: skip
    for name in [n for n in read & direct if isinstance((globs or {}).get(n), type)]:
        # A class: read only where one of the attributes `fn` writes is (a
        # workflow calling `Counted.first()` reads no `Counted.runs` it bumps);
        # wherever a step reaches it through another name.
        attrs = None if name in through else _class_attributes(fn, own, name)
        for helper in via if attrs is not None else ():  # `def set_mode(m): Cfg.mode = m`
            more = _class_attributes(None, [helper], name)
            attrs = None if more is None or attrs is None else attrs | more
        cls, readers = (globs or {})[name], [(d, names, owner) for d, names, seen, owner in others if name in seen]
        # Named, and maybe reached through a helper or an alias too (`describe()` returning `Cfg.mode`).
        if attrs is not None and not any(
            id(d) in foreign or name not in names or name in reached(names - {name}, src.tree)
            or _reads(d, name, cls, attrs, owner)
            for d, names, owner in readers
        ):
            read.discard(name)
    # A draw (`RNG.random()`, `next(IT)`) reads what it changes: the step called again reads it too.
    tree = src.tree
    if itself:  # its next call is the reader; not of a library's module (`os.remove(p)`), unless it holds a generator
        read = {n for n in read if not library_module(v := (globs or {}).get(n)) or hidden_state(v) is not None}
        return tuple(sorted(read)) if read and called_again(tree, code.co_name, globs or {}) else ()
    drawn = set() if logs else drawn_in(own, globs or {}, lambda: called_again(tree, code.co_name, globs or {})) & direct
    return tuple(sorted(read | drawn))


def _factory_body(tree: ast.AST, own: list[ast.AST]) -> ast.AST:
    """The body of the function `own` is defined in, as a module of its
    own: where the cells of its closure are bound (`cache = {}`)."""
    parents = {id(c): p for p in walk(tree) for c in ast.iter_child_nodes(p)}
    node = parents.get(id(own[0])) if len(own) == 1 else None
    while node is not None and not isinstance(node, _FUNCS):
        node = parents.get(id(node))
    return ast.Module(body=node.body, type_ignores=[]) if node is not None else ast.Module(body=[], type_ignores=[])


def _selves(globs: Mapping[str, Any]) -> frozenset[str]:
    """The names a module's steps may reach it by (`import flow`, in a step
    too, `from pkg import flow`): its own name's parts, and its globals
    bound to it."""
    own = {k for k, v in list(globs.items()) if isinstance(v, types.ModuleType) and vars(v) is globs}
    return frozenset(own | set(str(globs.get("__name__", "")).split(".")))


def _class_attributes(fn: Any, defs: list[ast.AST], name: str) -> frozenset[str] | None:
    """The attributes of class `name` that `fn` writes or changes in place
    (`name.runs += 1`, `cls.mode = m`, `cls.seen.append(x)`); None when it
    may change another (`setattr(name, ...)`, `vars(cls)`): not told."""
    if len(defs) != 1:
        return None
    first, on_class = _first(fn, defs[0], name)
    found: set[str] = set()
    parts = {id(a.value) for a in walk(defs[0]) if isinstance(a, ast.Attribute)}
    for sub in walk(defs[0]):
        if isinstance(sub, ast.Attribute) and _is_class(sub.value, name, first, on_class):
            found.add(sub.attr)
        elif isinstance(sub, ast.Name) and sub.id in (name, first if on_class else name) and id(sub) not in parts:
            return None  # the class whole: handed to a call, or aliased
    return frozenset(found)


def _reads(d: ast.AST, name: str, cls: type, attrs: frozenset[str], owner: str | None) -> bool:
    """Whether `d` (a method of class `owner`, or None) may read one of
    `attrs` of class `name` (`cls`): by name (`Cfg.mode`), through its first
    parameter when it is a method of it (`self.mode`, `cls.mode`), through
    a method that is no step (`Cfg.describe()` reading `cls.mode`), or the
    class whole (`f(Cfg)`, `vars(self)`)."""
    params = [*d.args.posonlyargs, *d.args.args] if isinstance(d, _FUNCS) else []
    via = {name} | ({params[0].arg} if owner == name and params else set())
    # Data it does not write, a step (read by its own body), or one it only
    # stores (`cls.runs += 1`: a count all bump).
    harmless = {id(a.value) for a in walk(d) if isinstance(a, ast.Attribute)
                and ((a.attr not in attrs and _inert(cls, a.attr)) or not isinstance(a.ctx, ast.Load))}  # fmt: skip
    return any(isinstance(n, ast.Name) and n.id in via and id(n) not in harmless for n in walk(d))


def _inert(cls: type, attr: str) -> bool:
    """Whether reading `attr` of `cls` (or of its instance) runs none of its
    code: plain data, an instance's own attribute, or a step or workflow."""
    for klass in cls.__mro__:
        if attr in vars(klass):
            member = vars(klass)[attr]
            if is_durable(getattr(member, "__func__", member)):  # under `staticmethod` too
                return True
            return not callable(member) and not hasattr(type(member), "__get__")
    return not hasattr(cls, "__getattr__")


def _first(fn: Any, node: ast.AST, name: str) -> tuple[str, bool]:
    """`fn`'s first parameter when `fn` (its `def` is `node`) is a method of
    class `name` (else ""), and whether it is the class (a class method)."""
    owner = getattr(fn, "__qualname__", "").rpartition(".")[0]
    return _first_of(node) if owner == name else ("", False)


def _first_of(node: ast.AST) -> tuple[str, bool]:
    """A method's first parameter ("" for none), and whether it is the class."""
    if not isinstance(node, _FUNCS) or not (params := [*node.args.posonlyargs, *node.args.args]):
        return "", False
    return params[0].arg, any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list)


def _is_class(node: ast.AST, name: str, first: str, on_class: bool) -> bool:
    """`Cfg`, or through a method's first parameter: `cls`, `type(self)`, `self.__class__`."""
    if isinstance(node, ast.Name):
        return node.id == name or (on_class and node.id == first)
    if isinstance(node, ast.Attribute):
        return node.attr == "__class__" and isinstance(node.value, ast.Name) and node.value.id == first != ""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
        and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == first != ""
    )  # fmt: skip


def _through_class(fn: Any, defs: list[ast.AST], globs: Any, logs: bool) -> frozenset[str]:
    """The module-level name of the class whose method `fn` is, when it
    writes an attribute of the class through `cls` (a class method),
    `type(self)` or `self.__class__` (`cls.mode = "fast"`), as `Cfg.mode =
    "fast"` writes `Cfg`; and `logs`: bumps or appends to one too."""
    owner = getattr(fn, "__qualname__", "").rpartition(".")[0]
    if not owner.isidentifier() or not isinstance((globs or {}).get(owner), type) or len(defs) != 1:
        return frozenset()
    first, on_class = _first(fn, defs[0], owner)
    return frozenset({owner}) if _changes_own_class(defs[0], first, on_class, logs) else frozenset()


def _changes_own_class(node: ast.AST, first: str, on_class: bool, logs: bool) -> bool:
    """Whether a method (its `def` is `node`, its first parameter `first`)
    writes its class through it: `cls.mode = m`, `type(self).mode = m`."""
    methods = MUTATORS if logs else MUTATORS - LOGS
    parents = {id(c): p for p in walk(node) for c in ast.iter_child_nodes(p)} if first else {}
    for sub in walk(node) if first else ():
        if isinstance(sub, ast.Assign) and on_class and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Attribute):
            # A lazy client kept on the class (`if cls._conn is None: cls._conn = connect()`).
            targets = [] if filled_from_module(sub.targets[0], parents, first) else list(sub.targets)
        elif isinstance(sub, (ast.Assign, ast.Delete)):
            targets = list(sub.targets)
        elif isinstance(sub, ast.AnnAssign) or (logs and isinstance(sub, ast.AugAssign)):
            targets = [sub.target]
        elif isinstance(sub, ast.Call) and (got := method(sub.func)) and (got[1] is None or got[1] in methods):
            targets = [got[0]]  # `cls.items.append(x)`, `cls.items.__iadd__([x])`, `getattr(cls.items, k)(x)`
        else:
            continue
        if any(_within(t, first, on_class) for t in targets):
            return True
    return False


def _within(target: ast.AST, first: str, on_class: bool) -> bool:
    """Whether `target` is a part of the class through a method's first
    parameter: `cls.x`, `cls.x[k]`, `type(self).x`, `self.__class__.x`."""
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        if isinstance(target, ast.Attribute) and _is_class(target.value, "", first, on_class):
            return True
        target = target.value
    return False


def _durable_defs(tree: ast.AST, own: list[ast.AST]) -> list[_Def]:
    """The steps and workflows of a module, each with the names it uses and
    the class whose method it is (None for a function); and `own`, the
    definitions of a function run as a step (a `loop_over` item's)."""
    seen = _DEFS.get(id(tree))
    if seen is not None and seen[0] is tree:
        return seen[1] + [(d, stepreach.names_used(d), None) for d in own if all(d is not o for o, _, _ in seen[1])]
    ours = [n for n in walk(tree) if isinstance(n, _FUNCS) and any(map(is_our_decorator, n.decorator_list))]
    # A method reads its class's attributes without naming it (`self.mode`, `cls.mode`).
    owners = {id(d): c.name for c in getattr(tree, "body", ()) if isinstance(c, ast.ClassDef) for d in c.body}
    found: list[_Def] = [
        (d, stepreach.names_used(d) | frozenset(filter(None, [owners.get(id(d))])), owners.get(id(d)))
        for d in ours
    ]
    if len(_DEFS) > 256:
        _DEFS.clear()
    _DEFS[id(tree)] = (tree, found)
    return _durable_defs(tree, own)
