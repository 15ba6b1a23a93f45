"""What an instance holds beyond what its type says of it (DESIGN §2
"Identity of a call"): its own attributes and slots, what a pickling hook
of its class returns, and what a hook of the user's own class leaves out
of the state it pickles. A step may read any of them, so an argument's
digest counts them (fail closed); a `functools.cached_property` it fills
is derived from the rest and never counts, one the program sets itself
(`obj.prop = 5`) does (`memo_counts`)."""

from __future__ import annotations

import copyreg
import functools
import types
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .._storage.raised import RAISED_AT
from .code import _user_classes


def own_state(
    v: Any, *, below: type | None = None, skip: tuple[str, ...] = (), by_getstate: bool = True
) -> Any:
    """What an instance holds beyond the value of its base type `below` (for
    a mapping: beyond its items): what `__getstate__` returns, when a class
    of its own (one between its type and `below`) defines it (and
    `by_getstate`); else its instance `__dict__` and the slots those classes
    declare, by name. None when it holds nothing more."""
    own = []
    for cls in type(v).__mro__:
        if cls is below or cls is object:
            break
        own.append(cls)
    if by_getstate and any("__getstate__" in vars(cls) for cls in own):
        return ("__getstate__", v.__getstate__())
    try:
        state = dict(object.__getattribute__(v, "__dict__"))
    except AttributeError:
        state = {}
    for cls in own:
        declared = vars(cls).get("__slots__", ())
        for slot in (declared,) if isinstance(declared, str) else declared:
            if slot.startswith("__") and not slot.endswith("__"):  # name-mangled
                slot = f"_{cls.__name__.lstrip('_')}{slot}"
            member = vars(cls).get(slot)
            if isinstance(member, types.MemberDescriptorType):
                try:
                    state[slot] = member.__get__(v, cls)
                except AttributeError:
                    continue  # never set
    for name in [*skip, RAISED_AT, *(n for n, x in list(state.items()) if not memo_counts(v, own, n, x))]:
        state.pop(name, None)
    return sorted(state.items(), key=lambda pair: pair[0]) if state else None


def memoised(classes: Sequence[type], name: str) -> bool:
    """A `functools.cached_property` of one of `classes`."""
    return any(isinstance(vars(cls).get(name), functools.cached_property) for cls in classes)


# (id(instance), name) -> (a weak reference to the instance, one to the value): a
# cached property's value a digest counted, and one the digest after a
# step's body found there instead (`after_body`): the body computed it.
_Seen = dict[tuple[int, str], tuple[Any, Any]]
_COUNTED: _Seen = {}
_FILLED: _Seen = {}
_AFTER: ContextVar[bool] = ContextVar("durable_after_body", default=False)


def memo_counts(v: Any, classes: Sequence[type], name: str, value: Any) -> bool:
    """Whether an attribute `name` of `v`'s instance dict counts in its
    digest: any but a `functools.cached_property` a step's body computed
    (derived from the rest, and there only once something read it: a
    replayed step does not). One the program set (`obj.prop = 5`, before
    or after it was computed) or computed outside a step counts by value:
    left out, a cached step was served another value's output."""
    if not memoised(classes, name):
        return True
    key = (id(v), name)
    if _held(_FILLED, key, v, value):
        return False
    if not _AFTER.get():
        _remember(_COUNTED, key, v, value)
        return True
    counted = _held(_COUNTED, key, v, value)
    if not counted and not _remember(_FILLED, key, v, value):
        return True  # no weak reference: counted before as now (fail closed)
    return counted


@contextmanager
def after_body() -> Iterator[None]:
    """Digests taken after a step's body ran: a cached property there that
    the digest before did not count was computed by the body."""
    token = _AFTER.set(True)
    try:
        yield
    finally:
        _AFTER.reset(token)


def _held(seen: _Seen, key: tuple[int, str], v: Any, value: Any) -> bool:
    found = seen.get(key)
    return found is not None and found[0]() is v and found[1]() is value


def _remember(seen: _Seen, key: tuple[int, str], v: Any, value: Any) -> bool:
    if len(seen) >= 4096:  # many objects: those seen before count again (fail closed)
        seen.clear()
    try:  # forgotten with the instance: the value may be large (a model)
        instance = weakref.ref(v, functools.partial(_forget, seen, key))
    except TypeError:  # no weak reference to it
        return False
    try:  # weakly too: a value referring to its instance (a model given its owner) kept both
        held: Any = weakref.ref(value)
    except TypeError:  # an int, a list: held, and gone with the instance unless it refers to it
        held = functools.partial(_same, value)
    seen[key] = (instance, held)
    return True


def _same(value: Any) -> Any:
    return value


def _forget(seen: _Seen, key: tuple[int, str], ref: Any) -> None:
    if seen.get(key, (None,))[0] is ref:
        del seen[key]


_HOOKS = ("__getstate__", "__reduce__", "__reduce_ex__")


class LeftOut:
    """An attribute a class's own pickling hook leaves out of its state."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def left_out(v: Any, state: Any) -> list[tuple[str, LeftOut]] | None:
    """The attributes (and slots) of an instance of a class of the user's own
    code that a pickling hook (`__getstate__`, `__reduce__`, a reducer
    registered with `copyreg`) leaves out of the state it
    pickles: a step may read them (`self.k = k` kept out of `{"name": ...}`),
    so the object's digest counts them too (fail closed), each by content
    where it has one, else by its type (`content._left_out_content`: a lock the hook
    leaves out because it cannot be pickled). None for a class without
    such a hook, or when the state holds every attribute as it is."""
    # A library's hook is its authors' rule (numpy's masked array keeps out
    # a cached view); a user's class that pickles less than it holds, by a
    # hook of its own or one it inherits (numpy's array: a subclass's `unit`), is not.
    kind: type = type(v)
    own = _user_classes(kind)
    hooked = any(hook in vars(cls) for cls in kind.__mro__[:-1] for hook in _HOOKS)
    if not own or not (hooked or kind in copyreg.dispatch_table):  # `copyreg.pickle(M, ...)`
        return None
    held = own_state(v, by_getstate=False)
    if held is None:
        return None
    kept = [s for s in (state if type(state) is tuple else (state,)) if type(s) is dict]
    left = [(n, LeftOut(x)) for n, x in held if not any(n in s and s[n] is x for s in kept)]
    return left or None
