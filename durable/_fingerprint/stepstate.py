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
from .classwrites import changes_own_class, class_attributes, first_of, reads_class, through_class
from .heldobjects import held_methods, only_called
from .heldreads import held_helpers, reached_held, unread
from .helperreads import helper_readers, helper_writes
from .hiddenrng import called_again, hidden_state, same_generator
from .imports import library_module
from .kept import by_code
from .nodes import walk
from .objectstate import calls_change_nothing, object_writes
from .selffills import memo_only
from .source import find_definitions, runs_this_source, source_of
from .stepreach import ANY, UNNAMED, aliases, helpers, hidden_writes, local_names, methods, reached
from .written import drawn_in, written_in

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# id(code) -> (code, (state_written, state_logged, state_reread)): found in one pass.
_FOUND: dict[int, tuple[types.CodeType, tuple[tuple[str, ...], ...]]] = {}
_Def = tuple[ast.AST, frozenset[str], "str | None"]  # a step or workflow, the names it uses, its class
_DEFS: dict[int, tuple[ast.AST, list[_Def]]] = {}


def state_written(fn: Any) -> tuple[str, ...]:
    """The globals `fn` writes (`STATE[k] = v`, `global RATE`) that the code
    of another step or workflow of its module reads (not only writes: a
    counter every step bumps is their own state); () when its source cannot
    be read. A replayed step does not redo that write, so a resumed run
    would go on with the value the import left."""
    return _found(fn)[0]


def state_logged(fn: Any) -> tuple[str, ...]:
    """The globals `fn` only counts or logs in (`CALLS["put"] += 1`,
    `LOG.append(x)`) that the code of another step or workflow of its
    module reads (`" ".join(LOG)`); () when its source cannot be read. A
    replay does not redo the append either, but a later step's appends
    change the log since (an equal value cannot vouch for it): only the
    process that made the record, where the log holds the append, replays it."""
    return _found(fn)[1]


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
    return _found(fn)[2]


def _found(fn: Any) -> tuple[tuple[str, ...], ...]:
    # The three are asked together (`_core.written`), the first time a step runs (on an
    # event loop's thread too): each made its own pass over the module, four in all.
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return (), (), ()
    return by_code(_FOUND, code, lambda: _written_read(fn, code))


def _written_read(fn: Any, code: types.CodeType) -> tuple[tuple[str, ...], ...]:
    """`state_written`, `state_logged` and `state_reread` of `fn`, in one
    pass over its module: what it writes, directly or through what it
    calls, found once; then which of it another step or workflow reads
    (all or only what it counts or logs in), or its own next call."""
    globs = getattr(fn, "__globals__", None)
    src = source_of(code.co_filename, globs)
    if src.tree is None or not runs_this_source(code, src, globs):
        return (), (), ()
    own, tree = find_definitions(code, src), src.tree
    # What it writes through a plain function it calls, or a call (`setattr(Cfg, ...)`,
    # `globals()[k]`, `registry()[k]`), is written too; and through a method of a class of
    # the module that is no step, called by the class's name (`Cfg.configure("fast")`).
    plain = held_helpers(own, tree, globs or {})  # `TOOLS[name](x)` of a registry too
    called = methods([*own, *plain], tree)
    via = [*plain, *(m for _, m in [*called, *held_methods([*own, *plain], globs or {})])]
    through = {c for c, m in called if changes_own_class(m, *first_of(m), logs=False)}
    ns = globs or {}
    selves = (_selves(ns), str(ns.get("__name__", "")), str(ns.get("__package__") or ""))  # `import flow as me; me.LOG.append(x)`
    mine_written = written_in(own, False, globs) | hidden_writes(own, tree, *selves) | through_class(fn, own, globs, logs=False)
    nonlocals = {n for d in own for g in walk(d) if isinstance(g, ast.Nonlocal) for n in g.names}  # `nonlocal n; n = n + 1`
    further = through | ((written_in(via, False, globs) | hidden_writes(via, tree, *selves)) - local_names(via))
    theirs_too = helper_writes([*own, *plain], globs or {}, False, tree)  # `helpers.log(x)`, another module's
    held = object_writes([*own, *plain], globs or {})
    logged_own = written_in(own, True, globs) | through_class(fn, own, globs, logs=True)
    logged_more = helper_writes([*own, *plain], globs or {}, True, tree) | (written_in(via, True, globs) - local_names(via))

    def answer(logs: bool, itself: bool) -> tuple[str, ...]:
        """Those of the globals `fn` writes (`logs`: only those it counts or
        logs in) that another step or workflow of its module reads; `itself`:
        that its own code reads, and the cells of its closure, when called again."""
        # Not the locals (`out[k] = v`), nor the cells of its closure (`state[k]
        # = v` on a dict a factory made): no module-level value another step reads;
        # but its own next call does (`itself`).
        theirs = {*code.co_varnames, *code.co_cellvars, *([] if itself else code.co_freevars)}
        written = (mine_written - theirs) | (nonlocals if itself else set()) | further | theirs_too
        objects = {n: a for n, a in held.items() if ANY not in written and (n not in written or only_called(n, [*own, *via]))}
        written |= objects.keys()  # `MEMORY.remember(x)`: told by what its methods change, read
        if logs:
            written = ((logged_own - theirs) | logged_more) - written
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
            for d, names, owner in _durable_defs(tree, own if itself else []) if (id(d) in mine) is itself
            for seen in [reached_held(names, tree, globs or {})]
        ]  # fmt: skip
        direct = written - {ANY}
        if ANY in written:  # a name the text does not spell: any the others read
            written = direct | {n for _, _, seen, _ in others for n in seen if n in (globs or {})}
        written |= aliases(written, globs) | same_generator(written, globs or {})  # `rnd` of `from random import random as rnd`
        # Another module's helper it calls (`helpers.describe()`), told by the object it reads.
        ours = [d for d, _, _, _ in others]
        elsewhere = helper_readers([*ours, *helpers(ours, tree)], globs or {}, frozenset(written - {ANY}))
        others, foreign = others + [(d, n, n, o) for d, n, o in elsewhere], {id(d) for d, _, _ in elsewhere}
        read = {n for d, _, seen, _ in others if written & seen for n in (written & seen) - stepreach.written_only(d, tree, written, id(d) in foreign, globs)}
        read -= unread({n: a for n, a in objects.items() if n in read}, others, foreign, tree, globs or {})
        # A memo or lazy client only filled, here alone (`if k not in CACHE: CACHE[k] = ...`): filled again alike.
        cells = frozenset(code.co_freevars) if itself else frozenset()  # a memo a factory made: `cache = {}` in it
        read = {n for n in read if n in theirs_too or any(n in x for d, _, x, _ in others if id(d) in foreign)
                or not memo_only(_factory_body(tree, own) if n in cells else tree, n)}  # fmt: skip
        for name in [n for n in read & direct if isinstance((globs or {}).get(n), type)]:
            # A class: read only where one of the attributes `fn` writes is (a
            # workflow calling `Counted.first()` reads no `Counted.runs` it bumps);
            # wherever a step reaches it through another name.
            attrs = None if name in through else class_attributes(fn, own, name)
            for helper in via if attrs is not None else ():  # `def set_mode(m): Cfg.mode = m`
                more = class_attributes(None, [helper], name)
                attrs = None if more is None or attrs is None else attrs | more
            cls, readers = (globs or {})[name], [(d, names, owner) for d, names, seen, owner in others if name in seen]
            # Named, and maybe reached through a helper or an alias too (`describe()` returning `Cfg.mode`).
            if attrs is not None and not any(
                id(d) in foreign or name not in names or name in reached(names - {name}, tree)
                or reads_class(d, name, cls, attrs, owner)
                for d, names, owner in readers
            ):
                read.discard(name)
        # A draw (`RNG.random()`, `next(IT)`) reads what it changes: the step called again reads it too.
        if itself:  # its next call is the reader; not of a library's module (`os.remove(p)`), unless it holds a generator
            read = {n for n in read if not library_module(v := (globs or {}).get(n)) or hidden_state(v) is not None}
            return tuple(sorted(read)) if read and called_again(tree, code.co_name, globs or {}) else ()
        drawn = set() if logs else drawn_in(own, globs or {}, lambda: called_again(tree, code.co_name, globs or {})) & direct
        return tuple(sorted(read | drawn))

    written = answer(False, False)
    reread = tuple(sorted({*answer(False, True), *answer(True, True)}))
    # What its own next call reads back counts by process too, as a log does: in this
    # process the object holds each earlier call's write, however many.
    logged = tuple(sorted({*answer(True, False), *(set(reread) - set(written))}))
    return written, logged, reread


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
