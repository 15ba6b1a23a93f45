"""What a step writes that another step reads, in its record: the
module-level values it changes in place or rebinds (`STATE[k] = v`, `global
RATE`) by content, as the body left them, and a count or a log it appends
to (`LOG.append(x)`, `N += 1`) by which list or dict of which process holds
the appends. A replay cannot redo the write: where the value is otherwise
(a new process, whose import left `STATE` empty; the module executed again
in this one, a notebook's cell or `importlib.reload`, which made a new `LOG`)
the call counts as changed (`stepstate` finds the names)."""

from __future__ import annotations

import io
import os
import sys
import types
from typing import Any

from .._fingerprint.changers import drawn, is_queue
from .._fingerprint.helperreads import MISSING, global_value
from .._fingerprint.hiddenrng import hidden_state
from .._fingerprint.reach import is_user_code, target_of
from .._fingerprint.references import referenced_objects
from .._fingerprint.stepstate import state_logged, state_reread, state_written
from .._fingerprint.userclasses import users_class
from .bound import _step_function
from .identity import _IMMUTABLE, is_token, value_digest

# (step name, its fingerprint) -> the module-level values it writes that another
# step reads: steps of one name in two modules are two steps (`changed._written`).
WRITERS: dict[tuple[str, str], tuple[str, ...]] = {}
# Those of them it reads back itself, at a later call (`stepstate.state_reread`).
REREAD: dict[tuple[str, str], tuple[str, ...]] = {}


def with_written(fn: object, digest: str, name: str = "", fp: str = "") -> str:
    """A call's digest joined with the module-level values `fn` (under
    partials, bindings and the step) changes that another step or workflow
    of its module reads (`STATE[k] = v` in `put`, `STATE.get(k)` in `get`:
    `stepstate`), as they are now, and those the steps it runs plainly
    change (`plain_steps`). A step's record holds them as the body
    left them: a replay where they are otherwise (a new process, where the
    import left `STATE` empty) is a changed call, since it cannot redo the
    write; in the process that made it, with nothing changed since, it
    replays. One without a digest (a client) is left out. `name`, `fp`:
    the step's, under which `WRITERS` notes them for a refusal to name."""
    # Most steps write nothing another reads: known once for the function and
    # its code (what `stepstate` finds is a property of the code object, the
    # steps a closure or a default holds are the function's, and a `__code__`
    # or `__wrapped__` set since is another one), not found again at each of
    # the two calls a step makes.
    if quiet(fn):
        return digest
    target = target_of(fn)  # a step's own function too (a `loop_over` block's `fn`)
    if is_token(digest):
        return digest
    inner = plain_steps(target)
    found = [(w, state_written(w), state_logged(w)) for w in (target, *inner)]
    if not any(names or logged for _, names, logged in found):
        if target is fn and type(fn) is _FUNCTION and not inner:
            if len(_QUIET) >= 4096:
                _QUIET.clear()
            _QUIET[id(fn)] = (fn, fn.__code__)
        return digest
    if len(WRITERS) > 1024:
        WRITERS.clear()
        REREAD.clear()
    WRITERS[name, fp] = tuple(n for _, names, logged in found for n in names + logged)
    REREAD[name, fp] = tuple(n for w, _, _ in found for n in state_reread(w))
    taken: list[Any] = []
    for writer, names, logged in found:
        taken += _taken(writer, names, logged)
    return value_digest((digest, taken)) if taken else digest


def _taken(target: object, names: tuple[str, ...], logged: tuple[str, ...]) -> list[Any]:
    """What `with_written` joins of the values `target` writes (`names`) and logs in."""
    values = _values(target, names + logged)
    taken: list[Any] = []
    for n in (n for n in names if n in values):
        if not is_token(d := _content(values[n])):
            taken.append((n, d))
        elif _held_only(values[n]):  # no digest: which process holds it, as a log
            taken.append((n, PROCESS[0], held(values[n])))
    # A count or a log: which process holds what it appended.
    taken += [(n, PROCESS[0], held(values[n]) or held(_code(target))) for n in logged if n in values]
    return taken


def plain_steps(target: object) -> tuple[object, ...]:
    """The functions of the steps a call of `target` runs as plain calls:
    those its code reaches (through the plain functions it calls, and on
    through theirs), where steps have no record of their own (in a step's
    body, in a `loop_over` item), and the bodies of the workflows it runs
    (each a run of its own, with the steps those reach). What they write is
    the call's write, in its record, as `target`'s own is: `outer` calling
    `add`, which appends to the `TOTAL` that `total` reads, was replayed in
    a new process without the appends."""
    return _ran(target)[0]


def plain_functions(target: object) -> tuple[object, ...]:
    """The functions of the user's a call of `target` runs besides its own:
    the plain ones its code reaches and the steps it runs plainly (with
    theirs). What they read that another step changes is read by the call
    (`cachestate.state_values`)."""
    return _ran(target)[1]


def _ran(target: object) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(`plain_steps`, `plain_functions`), found once for the function and
    its code, while each function and step found at module level is still
    the one its name holds there (a notebook cell or a reload defines it
    anew: found again). Not the memo rule's witness: a cached step asks at
    each call, which that would make ten times costlier."""
    hit = _INNER.get(id(target))
    if hit is not None and hit[0] is target and hit[1] is target.__code__:  # (a function)
        if not hit[3] or all(space.get(name) is obj for space, name, obj in hit[3]):
            return hit[2]
    if type(target) is not _FUNCTION:
        return (), ()
    found, bound = _reached(target)
    if len(_INNER) >= 4096:
        _INNER.clear()
    _INNER[id(target)] = (target, target.__code__, found, bound)
    return found


def _inner_of(obj: object) -> Any:
    """The function a step or a workflow `obj` runs, None for anything else:
    also for an object whose attributes raise when read (a lazy module, a
    framework's proxy outside its context), which no decorator of ours made."""
    if not isinstance(obj, (types.FunctionType, types.MethodType)) and getattr(type(obj), "__durable_workflow__", False) is not True:
        return None
    inner = _step_function(obj)
    if inner is None and getattr(type(obj), "__durable_workflow__", False) is True:
        inner = getattr(obj, "fn", None)  # a run of its own, which a replay does not enter
    return inner


def _reached(target: types.FunctionType) -> tuple[tuple[tuple[object, ...], tuple[object, ...]], tuple[Any, ...]]:
    """`_ran`'s walk: through `referenced_objects` of the target and of each step found."""
    steps: list[object] = []
    functions: list[object] = []
    bound: list[tuple[Any, str, object]] = []  # (module namespace, name, what it holds)
    todo, seen = [target], {id(target)}
    while todo:
        for obj in referenced_objects(todo.pop()):
            inner = _inner_of(obj)
            fn = obj if inner is None else inner
            if id(obj) in seen or id(fn) in seen or not (inner is not None or _user_function(obj)):
                continue
            seen.update((id(obj), id(fn)))
            functions.append(fn)
            if inner is not None:
                steps.append(inner)
                todo.append(inner)  # inside a step, every step runs plainly
            # Bound at module level by its name (a decorator's `functools.wraps` copies both).
            name, module = getattr(obj, "__name__", ""), sys.modules.get(getattr(obj, "__module__", None) or "")
            if module is not None and getattr(obj, "__qualname__", None) == name:
                bound.append((vars(module), name, obj))
    return (tuple(steps), tuple(functions)), tuple(bound)


def _user_function(obj: object) -> bool:
    return type(obj) is _FUNCTION and is_user_code(obj)


def _held_only(value: object) -> bool:
    """A written value told by which process holds it, having no digest: a
    queue (it holds a lock), an iterator a step draws from (`IT = gen()`,
    `next(IT)`: a generator cannot be pickled), not an open file (its
    writes are no step's result)."""
    return is_queue(value) or (drawn(value) and not isinstance(value, io.IOBase))


def quiet(fn: object) -> bool:
    """Whether `fn` is a function known to write nothing another step reads
    and to run no step plainly (`with_written` found so for it, with the
    code it has now; a `__wrapped__` set since is another function to look at)."""
    return (
        type(fn) is _FUNCTION
        and (hit := _QUIET.get(id(fn))) is not None
        and hit[0] is fn
        and hit[1] is fn.__code__
        and "__wrapped__" not in fn.__dict__
    )


def _content(value: object) -> str:
    """`value`'s digest; for a class (`Cfg.mode = "fast"` in a step), with
    the data its attributes hold now: its own digest is its code and its
    `class` statement as written, the same before and after the write."""
    if (state := hidden_state(value)) is not None:  # `random` of a step's `random.seed(x)`: its generator
        return value_digest(state)
    digest = value_digest(value)
    if is_token(digest):
        return digest
    if not isinstance(value, type):
        # An object of the user's class: with its classes' data, which its methods
        # change through `type(self)` or `self.__class__` (`type(self).seen.append(x)`).
        kinds = [d for c in type(value).__mro__ if users_class(c) and not is_token(d := _content(c))]
        return value_digest((digest, kinds)) if kinds else digest
    data = [(k, d) for k, v in sorted(vars(value).items()) if _is_data(k, v) and not is_token(d := value_digest(v))]
    return value_digest((digest, data)) if data else digest


def _is_data(name: str, value: object) -> bool:
    """An attribute holding data, not a dunder, method, descriptor or class."""
    return not name.startswith("__") and not callable(value) and not hasattr(type(value), "__get__")


def made_here(fn: object) -> str | None:
    """This process's token when `fn` (or a step it runs plainly) writes or
    logs in a module-level value another step reads (`with_written`), else
    None: a result it made in another process cannot bring that write along
    (a `loop_over` item kept there runs again here, `Block._kept`)."""
    target = target_of(fn)
    token, writes = PROCESS[0], False
    for writer in (target, *plain_steps(target)):
        names = state_written(writer) + state_logged(writer)
        if names:
            values, writes = _values(writer, names), True
            token += "".join(held(values[n]) or held(_code(writer)) for n in names if n in values)
    return token if writes else None


def _values(target: object, names: tuple[str, ...]) -> dict[str, object]:
    """What the written `names` hold now: globals of `target`'s module, or
    another module's that its helpers keep (`tally._L`); the cells of its
    closure (`nonlocal n`: `state_reread`), as the cell itself, which
    holds the count for as long as the closure lives."""
    globs = getattr(target, "__globals__", {})
    code, cells = getattr(target, "__code__", None), getattr(target, "__closure__", None) or ()
    mine = dict(zip(code.co_freevars, cells, strict=True)) if isinstance(code, types.CodeType) else {}
    return {n: v for n in names if (v := mine.get(n, MISSING) if n in mine else global_value(globs, n)) is not MISSING}


def held(value: object) -> str:
    """A token of this very object (the list, not its contents) for as long
    as this process runs: a module executed again binds a new one. The
    object is held, so that no other one takes its id meanwhile. A number,
    a string or a tuple (`global N; N += 1`) is a new object at each bump:
    none (its caller then tells the code that bumps it, which a module
    executed again compiles anew too)."""
    if type(value) in _IMMUTABLE or isinstance(value, (tuple, frozenset)):
        return ""
    kept = _HELD.get(id(value))
    if kept is None:  # held, no other object has its id: one entry per object
        if len(_HELD) >= 4096:  # what a new token costs is a replay refused, never a stale one
            _HELD.clear()
        kept = _HELD.setdefault(id(value), (value, os.urandom(8).hex()))  # two threads: one token
    return kept[1]


def _code(fn: object) -> object:
    """What a module executed again makes anew, and a function defined in a
    workflow's body at each call does not: its code."""
    return getattr(fn, "__code__", fn)


_HELD: dict[int, tuple[object, str]] = {}  # id -> (the object, its token)
_FUNCTION = types.FunctionType
# id -> the function (held, so that no other takes its id) and its code, of a
# function whose module-level writes (its own, and the steps' it runs plainly)
# no other step reads (`with_written`)
_QUIET: dict[int, tuple[types.FunctionType, types.CodeType]] = {}
# id -> (the function, held; its code; the functions of the steps it runs plainly, and
# of all the user's it runs: `plain_steps`, `plain_functions`; where each was bound)
_INNER: dict[int, tuple[Any, Any, tuple[tuple[object, ...], tuple[object, ...]], tuple[Any, ...]]] = {}


def _new_process() -> None:
    PROCESS[0] = os.urandom(16).hex()


# This process, told apart from any other (a forked child too): where a
# step's count or log holds what it appended (`with_written`).
PROCESS = [""]
_new_process()
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_new_process)
