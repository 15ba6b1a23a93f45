"""What a function a factory made holds, by content, where the statement
that made it cannot tell it: one reading the environment or a file
(`scale = make([float(os.environ["K"])])`: its text is the same whatever
it read), or none at module level at all (`def main(): mk([1] * n)(5)`).

Pure standard library."""

from __future__ import annotations

import ast
import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from ..errors import ConfigurationError
from .bindings import binding_statements
from .canon import node_hash
from .derived import OUTSIDE, made_in
from .imports import user_class
from .outside import _DEFS, reads_outside
from .outsidevalues import (
    _made_when_defined,
    _made_with,
    contents_now,
    holds_values,
    outside_tokens,
)
from .ownpath import path_tokens
from .reach import _cell_value, is_durable
from .values import hash_tokens
from .witness import witnessed


def defaults_from_outside(fn: Any, checked_file: str | None) -> dict[str, str]:
    """A module-level function's defaults by content, when its `def`'s
    defaults or decorators read the environment or a file (`def h(ks=
    [int(os.environ["K"])])`): counted by type alone, a list or an object
    there held another process's value as well. {} otherwise."""
    namespace, name = getattr(fn, "__globals__", None), getattr(fn, "__name__", "")
    if not isinstance(namespace, dict) or getattr(fn, "__qualname__", None) != name:
        return {}
    try:
        found = binding_statements(name, namespace, checked_file) or []
    except ConfigurationError:
        return {}
    made = [n for s in found if isinstance(s, _DEFS[:2]) and s.name == name for n in _made_when_defined(s)]
    toks = _made_with(fn) if made and reads_outside(made, namespace, checked_file) else None
    return {} if toks is None else {"defaults-contents": hash_tokens(toks)}


def made_from_outside(
    fn: Any,
    kept: Any,
    names: list[str],
    namespace: Mapping[str, Any],
    checked_file: str | None,
    calls: Sequence[ast.AST] = (),
) -> dict[str, str]:
    """What a function a factory made holds (its closure cells but the
    `kept` ones it only changes, its defaults), by content, when a
    statement that binds it (`names`), or a call of the factory that made
    it (`calls`: `print(mk([int(os.environ["K"])])(5))`), reads the
    environment or a file (`scale = make([float(os.environ["K"])])`), as a
    global made so counts (`outside_tokens`); {} otherwise: its statements
    count alone."""
    found = [*calls, *(s for n in names for s in binding_statements(n, namespace, checked_file) or [])]
    if not found or not reads_outside(found, namespace, checked_file):
        return {}
    toks: list[str] = []
    for value in _held(fn, kept):
        if not callable(value) or holds_values(value):  # a helper counts by its code
            toks += witnessed(outside_tokens, value) or ["obj:" + type(value).__qualname__]
    return {"made-contents": hash_tokens(toks)}


def held_contents(fn: Any, kept: Any) -> dict[str, str]:
    """What a function a factory made holds, by content, when no
    module-level statement shows what it was made with (`def main():
    print(mk([1] * n)(5))`, a test function's): counted by type, a list
    there held another call's value as well. A class of the user's code by
    the statement that defines it (an edit of its methods); an object with
    no contents to count (a client), and a path, by its type, as elsewhere."""
    factory = str(getattr(fn, "__qualname__", "")).partition(".<locals>.")[0]
    flow = getattr(fn, "__globals__", {}).get(factory)
    if is_durable(flow):  # defined in a workflow's body: by the run's arguments it reads (`bound.with_held`)
        return _read_outside_in_body(fn, getattr(flow, "fn", None), kept)
    toks: list[str] = []
    for value in _held(fn, kept):
        if isinstance(value, type) and user_class(value):
            toks += _class_statement(value)
        elif path_tokens(value) is None and (not callable(value) or holds_values(value)):
            # A path is where a file lies (`ownpath`); a helper counts by its code.
            toks += witnessed(held_snapshot, value) or ["obj:" + type(value).__qualname__]
    return {"made-contents": hash_tokens(toks)}


def _read_outside_in_body(fn: Any, body: Any, kept: Any) -> dict[str, str]:
    """What a function defined in a workflow's body holds of the body's
    locals that a statement reading the environment or a file made (`cfg =
    json.load(open(path))`, `derived.OUTSIDE`), by content: no argument of
    the run tells it, and by type alone a run resumed after the file
    changed replayed what the old contents computed. {} when it holds none."""
    body = inspect.unwrap(body) if callable(body) else body
    code = getattr(fn, "__code__", None)
    if not isinstance(body, types.FunctionType) or code is None:
        return {}
    made = made_in(body)
    if id(code) not in made.nested:
        return {}
    names = zip(code.co_freevars, getattr(fn, "__closure__", None) or (), strict=False)
    toks: list[str] = []
    for name, cell in names:
        if name in kept or OUTSIDE not in made.cells.get(name, ()):
            continue
        value = _cell_value(cell)
        if not callable(value) or holds_values(value):  # a helper counts by its code
            toks += [name, *(witnessed(outside_tokens, value) or ["obj:" + type(value).__qualname__])]
    return {"body-outside-contents": hash_tokens(toks)} if toks else {}


# Set while a step is decorated: a factory may fill what the step holds
# after decorating it (`items = []`, `@durable.step ...`, `items.extend(...)`).
DECORATING: ContextVar[bool] = ContextVar("durable_decorating", default=False)
# The run (workflow, run id) whose definition or body is fingerprinted here:
# set at its start (`as_run`) and in its body (`_core.entry`).
RUN_OF: ContextVar[tuple[str, str] | None] = ContextVar("durable_run_of", default=None)
# id -> (the object, its contents) as the last run here read them (`held_snapshot`),
# what the body's threads (no run set there) are answered; (id, run) -> as that run did.
_SNAPSHOTS: dict[int, tuple[object, list[str] | None]] = {}
_BY_RUN: dict[tuple[int, tuple[str, str]], tuple[object, list[str] | None]] = {}


def held_snapshot(obj: object) -> list[str] | None:
    """What a function a factory made holds, by content, as it was when a
    run first fingerprinted the function (its start, or the step's first
    call in it), kept per object and run for the process: what the program
    does to it later (a flag a test flips, a list its steps fill) is state
    it keeps, and a resume in another process reads it again there. Another
    run reads it afresh: one process running jobs one after another, each
    loading its configuration into the list (`items[:] = config`), recorded
    each job under the first one's contents. While a step is decorated,
    read and not kept: the factory may fill it after."""
    run = RUN_OF.get()
    if run is not None and not DECORATING.get():
        mine = _BY_RUN.get((id(obj), run))
        if mine is None or mine[0] is not obj:
            mine = _BY_RUN[(id(obj), run)] = (obj, _since_last_run(obj))
            _kept(_BY_RUN)
        _SNAPSHOTS[id(obj)] = mine
        _kept(_SNAPSHOTS)
        return mine[1]
    seen = _SNAPSHOTS.get(id(obj))
    if seen is not None and seen[0] is obj:
        return seen[1]
    toks = contents_now(obj)
    if not DECORATING.get():
        _kept(_SNAPSHOTS)
        _SNAPSHOTS[id(obj)] = (obj, toks)
    return toks


# id -> (the object, what the last run here whose body ended read it as, how that body left it).
_ENDED: dict[int, tuple[object, list[str] | None, list[str] | None]] = {}


def _since_last_run(obj: object) -> list[str] | None:
    """What a run starting now reads `obj` as: as the last run here whose
    body ended read it, when nothing changed it since that body ended (only
    runs' steps did: the state they keep, a list they log in, which a resume
    in another process finds as the program makes it); else as it is now
    (`items[:] = config` between two jobs). That run's own read, never
    another's: a run recalled complete or refused at its start reads it with
    no body to end, and taken as the last read, a job after it was recorded
    under that run's contents (a stale replay elsewhere)."""
    now, ended = contents_now(obj), _ENDED.get(id(obj))
    if now is not None and ended is not None and ended[0] is obj and ended[2] == now:
        return ended[1]
    return now


def run_left(run: tuple[str, str] | None) -> None:
    """The body of `run` ended here: note how it read, and left, what its steps hold."""
    for (key, of), (obj, read) in list(_BY_RUN.items()):
        if of == run:
            _ENDED[key] = (obj, read, contents_now(obj))
    _kept(_ENDED)


def _kept(snapshots: dict[Any, Any]) -> None:
    """At most 256 kept, the oldest let go first (each holds its object alive):
    read again, a change (fail closed)."""
    while len(snapshots) > 256:
        del snapshots[next(iter(snapshots))]


def same_snapshots(source: tuple[str, str], fork_id: str) -> str:
    """The run `fork_id` forked from `source` (its records copied, made under
    what `source` read) reads what its steps hold as `source` did, in this
    process. `fork_id`."""
    for (key, run), held in list(_BY_RUN.items()):
        if run == source:
            _BY_RUN[(key, (source[0], fork_id))] = held
    _kept(_BY_RUN)
    return fork_id


T = TypeVar("T")


def as_run(run: tuple[str, str], compute: Callable[[], T]) -> T:
    """`compute()` (a run's definition, at its start) as fingerprinted for `run`."""
    token = RUN_OF.set(run)
    try:
        return compute()
    finally:
        RUN_OF.reset(token)


def _class_statement(cls: type) -> list[str]:
    module = sys.modules.get(cls.__module__)
    namespace = vars(module) if module is not None and "." not in cls.__qualname__ else {}
    try:
        found = binding_statements(cls.__name__, namespace) if namespace.get(cls.__name__) is cls else None
    except ConfigurationError:  # edited since import: refused where its code is read
        found = None
    return [node_hash(s) for s in found] if found else ["type:" + cls.__qualname__]


def _held(fn: Any, kept: Any) -> list[Any]:
    """What `fn` holds: its closure cells but the `kept` ones it only
    changes, its defaults."""
    code = getattr(fn, "__code__", None)
    cells = zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None) or (), strict=False)
    values = [_cell_value(c) for n, c in cells if n not in kept]
    values += [*(getattr(fn, "__defaults__", None) or ())]
    return [*values, *(getattr(fn, "__kwdefaults__", None) or {}).values()]

