"""What a `persist=False` step returned stays out of the store by every way,
not only its own record: a block of a function calling it
(`loop_over(lambda x: secret(x), items)`), a step returning it on, a cache
entry, a workflow's or a child run's result.

The rule: each value such a step returns in a run (in the body, in another
step's body, in a `loop_over` item, in a process worker: `UNKEPT`) is held
by identity, with the parts a container gives (list, tuple, set items, dict
keys and values) and an object's attributes give (`__dict__`, `__slots__`), for the run's life (its root run's: a child shares its parent's).
An output that holds one is kept as a `persist=False` output is: a step or a
block leaves a marker and runs again on resume, an item is not kept, a cache
entry not made; a workflow returning one is refused (`SerializationError`):
a completed run hands back its stored result, and there is none to store.

Identity, not equality: a value made from the secret (`f"Bearer {token}"`)
is not found, and what is equal to it by chance is not refused. Values every
piece of code shares (None, booleans, small numbers, empty and one-letter
strings, interned strings: a literal such as `"GET"` is one object wherever
code spells it) are not held: a step returning `True` or `{"method": "GET",
"token": t}` marks neither `True` nor `"GET"`, only `t` (made at run time, a
token is never interned)."""

from __future__ import annotations

import collections
import ctypes
import enum
import functools
import sys
import threading
import types
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .._fingerprint.imports import user_class
from .._storage.codec import holds_any
from .context import RunState, current_state
from .threads import hand, hand_back, handed_state

T = TypeVar("T")

# Sent by a process or Dask worker with an item's output: a persist=False
# step returned something there (the output comes back as a new object).
UNKEPT = "unkept"
_MAX_OPENED = 5000
# Shared by every piece of code: a part of an output that is one of them is not opened.
_EVERYONES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, enum.Enum)
_SHARED = frozenset({type(None), bool, type(Ellipsis), type(NotImplemented)})


class _Here(threading.local):
    returned = 0  # persist=False outputs made outside a run's state (a worker's)


here = _Here()


def _shared(value: Any) -> bool:
    t = type(value)
    if t in _SHARED:
        return True
    if t is int:
        return bool(-5 <= value <= 256)  # CPython's cached ints
    if t is str:  # one-letter strings are cached too
        return len(value) <= 1 or _interned(value)
    if t is bytes or t is tuple:
        return len(value) <= (0 if t is tuple else 1)
    return False


def _interned_bits(s: str) -> int:
    # CPython's PyASCIIObject: refcount, type, length, hash, then a bit field
    # whose lowest two bits say whether (and how) the string is interned.
    return ctypes.c_uint32.from_address(id(s) + 4 * ctypes.sizeof(ctypes.c_void_p)).value & 3


def _reads_interning() -> bool:
    """Whether `_interned_bits` reads what this interpreter keeps (probed on
    strings whose interning is known); elsewhere no string counts as shared."""
    if sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    made = "".join(["durable", "-probe-", str(id(sys))])  # made at run time: never interned
    try:
        return _interned_bits(sys.intern("durable_probe_interned")) != 0 and _interned_bits(made) == 0
    except (ValueError, OSError):
        return False


_READS_INTERNING = _reads_interning()


def _interned(s: str) -> bool:
    """Whether `s` is an interned string: one object wherever code spells
    it (a literal such as `"GET"` in any module, an attribute's name). A
    library client a persist=False step returned holds many; marked, each
    made a later output spelling the same literal count as the secret. A
    token made at run time (read, received, joined) is never interned."""
    return _READS_INTERNING and _interned_bits(s) != 0


def note(ctx: RunState | None, value: Any) -> None:
    """Hold value and its parts as a persist=False step's output: what its
    containers hold (list, tuple, set items, dict keys and values), at any depth, and
    what an object's attributes hold (its `__dict__`, its `__slots__`: a
    token in a dataclass's field or a client's attribute), breadth first,
    through the first `_MAX_OPENED` objects. Only objects of the user's own
    classes are opened: a library's client (an HTTP or LLM client) holds
    many of the constants code shares (`"GET"`, `"https"`, interned: one
    object everywhere), and each marked would make any later output holding
    that constant count as holding the secret (rerun on every resume, a
    workflow returning it refused). A token a library object holds is not
    found: return the token itself, or wrap it with `durable.redact()`."""
    if ctx is None:
        here.returned += 1
        return
    marks = ctx.unkept  # its root run's (`run.run_locked` shares it)
    todo, opened = collections.deque([value]), 0
    while todo:
        v = todo.popleft()
        if _shared(v) or id(v) in marks:
            continue
        try:  # not kept alive by this: a big transient object goes when it is dropped
            marks[id(v)] = weakref.ref(v, functools.partial(_gone, marks, id(v)))
        except TypeError:  # str, int, list, dict...: held, so that its id is not another's
            marks[id(v)] = v
        if isinstance(v, (list, tuple, set, frozenset)):
            todo += v
        elif isinstance(v, dict):  # its keys too: `{token: scopes}` holds the token
            todo += v.keys()
            todo += v.values()
        elif opened < _MAX_OPENED and not isinstance(v, _EVERYONES) and user_class(type(v)):
            opened += 1
            todo += _attributes(v)


def _attributes(v: Any) -> list[Any]:
    """What an object's `__dict__` and `__slots__` hold (not its properties: nothing runs)."""
    found = []
    try:
        own = object.__getattribute__(v, "__dict__")
        found = list(own.values()) if type(own) is dict else []
    except Exception:  # no instance dict
        pass
    for base in type(v).__mro__[:-1]:
        for field in vars(base).values():
            if isinstance(field, types.MemberDescriptorType):  # a `__slots__` field
                try:
                    found.append(field.__get__(v, type(v)))
                except Exception:  # never set
                    continue
    return found


def _gone(marks: dict[int, Any], key: int, ref: Any) -> None:
    if marks.get(key) is ref:  # else its id is another's now
        del marks[key]


def returned(value: T) -> T:
    """A persist=False step's plain call returned value (no record of its own):
    the run's, also in a thread a step's body started or fed (it has no run
    state: the step returning value on would have written it; `threads`)."""
    note(current_state() or handed_state(), value)
    return value


def made_by(spec: Any, value: T) -> T:
    """value, as a step's plain call returned it (`returned` for a persist=False step)."""
    return value if spec.persist else returned(value)


def made_elsewhere(call: Callable[[], T]) -> tuple[T, str]:
    """call's value, and `UNKEPT` when a persist=False step returned something
    in it outside a run's state (a worker's: its output is another object there)."""
    before, handed = here.returned, hand(None)  # a Dask worker's thread: its output travels too
    try:
        value = call()
    finally:
        hand_back(handed)
    return value, UNKEPT if here.returned != before else ""


async def awaited(made: Awaitable[T]) -> T:
    """`returned` for an async step's plain call."""
    return returned(await made)


def holds(ctx: RunState | None, value: Any) -> bool:
    """Whether value is, or its stored bytes would hold, a value `note` holds."""
    if ctx is None:
        return False
    marks = ctx.unkept  # its root run's (`run.run_locked` shares it)
    if not marks:
        return False  # most runs: no persist=False step returned anything (the hot
        # paths ask `ctx.unkept` before calling: the same test, without a call)

    def seen(obj: Any) -> bool:
        held = marks.get(id(obj))
        return held is not None and (held is obj or (type(held) is weakref.ref and held() is obj))

    return seen(value) or holds_any(value, seen)
