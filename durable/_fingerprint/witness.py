"""Witnesses: what a fingerprint was computed from, cheap to check again.

Pure standard library. While a fingerprint is computed for the memo (see
`memo`), every input the analysis reads from the running program goes
through `witnessed` (or `witnessed_lookup`): the function and arguments that
produced it and the value they gave are kept. The memoised fingerprint is
reused only while every one of those calls gives the same value again, so a
rebound helper or constant, a replaced `__code__`, a changed closure cell,
an edited file or a new notebook cell makes it be computed afresh. What is
not read through here is not witnessed: a new input of the analysis must be
read through `witnessed`, or the memo would miss its changes.

Values are compared by `same`: plain scalars by type and value, tuples,
lists and dicts item by item, anything else by identity (the memo holds
the objects, so an id cannot be reused meanwhile). A list, dict or set found
by name may be changed in place without being rebound: where its contents
count (the functions it holds, its plain data when no statement binds it),
what they gave is witnessed as a fresh list.
"""

from __future__ import annotations

import linecache
import operator
import os
import struct
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_SCALARS = (str, int, bytes, bool, type(None))
_ITEMS = (tuple, list)
_UNSET = object()
_EXACT = frozenset({str, types.FunctionType, types.BuiltinFunctionType, types.ModuleType})


class Witness:
    """The calls an analysis made and what each gave (each call once); the
    source files it read (`file_state`) apart from the rest."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], Any]] = []
        self.files: list[tuple[Callable[..., Any], tuple[Any, ...], Any]] = []
        self._seen: dict[tuple[Any, ...], Any] = {}  # call -> the value it gave
        # The finished witnesses forwarded into this one (`forward`), by id
        # (held, so the ids stay theirs): checked as parts of this one, not
        # copied into it. Copied, each step's witness held every witness of
        # the steps it reached, and steps reaching each other through a
        # registry copied them over and over (half a million calls for 12).
        self._absorbed: dict[int, Witness] = {}

    def add(self, fn: Callable[..., Any], args: tuple[Any, ...], value: Any) -> None:
        # A call made again (a file read for its function, then for a
        # global's statement) is checked once, unless it gave another value
        # meanwhile: then both are kept, and both checked.
        key = call_key(fn, args)
        seen = self._seen.get(key, _UNSET)  # keys compare as str, int or by identity
        if seen is not _UNSET and (seen is value or same(seen, value)):
            return
        self._seen[key] = value
        (self.files if fn is file_state else self.calls).append((fn, args, value))

    def absorbed(self) -> Iterator[Witness]:
        """The witnesses forwarded into this one."""
        return iter(self._absorbed.values())

    @property
    def alone(self) -> bool:
        """Whether no other witness was forwarded into this one."""
        return not self._absorbed

    def holds(self, *, files: bool = True) -> bool:
        """Whether every call gives the same value now. Any error counts as
        a change (fail closed). Without `files`, the source files are not
        looked at: the running objects alone say which code runs (each
        function's `__code__` is witnessed), the text only whether it was
        edited since import, which a run's start reports."""
        if not self._absorbed:  # most steps' own: nothing forwarded into it
            return self._own_holds(files)
        todo, seen = [self], {id(self)}
        while todo:
            witness = todo.pop()
            if not witness._own_holds(files):
                return False
            for inner in witness._absorbed.values():
                if id(inner) not in seen:
                    seen.add(id(inner))
                    todo.append(inner)
        return True

    def code_changed(self) -> bool:
        """Whether what changed since is code (without the source files):
        a call that gives another function, class or code object now, or
        gave one then (a helper a notebook cell redefined, a module
        reloaded), rather than only other values (a class attribute a step
        set); an error counts as code (fail closed)."""
        todo, seen = [self], {id(self)}
        while todo:
            witness = todo.pop()
            for fn, args, value in witness.calls:
                try:
                    now = fn(*args)
                    if now is value or same(now, value):
                        continue
                except Exception:
                    return True
                if type(now) is not tuple or type(value) is not tuple or len(now) != len(value):
                    now, value = (now,), (value,)
                pairs = zip(now, value, strict=True)
                if any((_code_like(a) or _code_like(b)) and not same(a, b) for a, b in pairs):
                    return True
            todo.extend(w for w in witness._absorbed.values() if id(w) not in seen)
            seen.update(id(w) for w in witness._absorbed.values())
        return False

    def holds_alone(self, files: bool) -> bool:
        """`holds` of a witness nothing was forwarded into; False for others."""
        return not self._absorbed and self._own_holds(files)

    def _own_holds(self, files: bool) -> bool:
        try:
            for fn, args, value in self.calls + self.files if files else self.calls:
                now = fn(*args)
                if now is value:
                    continue
                if type(now) is tuple and type(value) is tuple and len(now) == len(value):
                    if all(map(operator.is_, now, value)):  # the same objects: in C
                        continue
                if type(now) is bytes and type(value) is bytes and now == value:
                    continue  # a file's state (`file_state`)
                if not same(now, value):
                    return False
        except Exception:
            return False
        return True


_RECORDING: ContextVar[Witness | None] = ContextVar("durable_fingerprint_witness", default=None)


@contextmanager
def recording(witness: Witness) -> Iterator[Witness]:
    """Calls to `witnessed` in this context (thread, task) go to `witness`."""
    token = _RECORDING.set(witness)
    try:
        yield witness
    finally:
        _RECORDING.reset(token)


def witnessed(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, remembered when a fingerprint is being memoised."""
    value = fn(*args)
    remember(fn, args, value)
    return value


def remember(fn: Callable[..., Any], args: tuple[Any, ...], value: Any) -> None:
    """That `fn(*args)` gave `value`, when a fingerprint is being memoised."""
    witness = _RECORDING.get()
    if witness is not None:
        witness.add(fn, args, value)


def forward(inner: Witness) -> None:
    """A memoised value used while another is being memoised (a step's
    fingerprint inside a workflow's definition): what it was computed from
    counts for the outer one too, which then holds only while they do."""
    outer = _RECORDING.get()
    if outer is not None and outer is not inner:
        outer._absorbed[id(inner)] = inner


def call_key(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A call's key, exact: the function and each argument by identity (an
    id cannot be taken by another object meanwhile: the first call's objects
    are held in `calls`), except a string, a function, a builtin and a
    module, whose equality is their identity or their text (so a name
    spelled twice, or `globs.get` made afresh for each name, is one call).
    Nothing is compared by a user's `__eq__`, which could call two
    different objects one."""
    return (*map(_call_part, (fn, *args)),)


def _call_part(x: Any) -> Any:
    return x if type(x) in _EXACT else id(x)


def same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _ITEMS:
        return len(a) == len(b) and all(map(same, a, b))
    if kind is dict:
        return bool(a.keys() == b.keys()) and all(same(a[k], b[k]) for k in a)
    if kind is types.MethodType:  # made anew at each access (`W.put` of a classmethod)
        return a.__func__ is b.__func__ and a.__self__ is b.__self__
    return kind in _SCALARS and bool(a == b)  # a float, or any object: by identity only


def file_state(filename: str) -> object:
    """What a file's text is told by: its stat (taken before the text is
    read, so that an edit in between is a change), or, for a notebook cell
    or a zip import (no file), the linecache entry holding the text."""
    try:
        st = os.stat(filename)
    except (OSError, ValueError):
        return linecache.cache.get(filename)
    # One bytes value: `holds` compares it in one step (a tuple goes item
    # by item), and packing costs a third of formatting the four numbers.
    try:
        return _STAT(st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
    except struct.error:  # out of range (a date past 2262): spelled out instead
        return f"{st.st_mtime_ns} {st.st_size} {st.st_ino} {st.st_ctime_ns}"


_STAT = struct.Struct("=qqQq").pack


def live_state(fn: Any) -> tuple[Any, ...]:
    """A function's names, defaults and closure cells as they are now, and
    the type of each value (an object's class decides how it counts), as
    one flat tuple: unchanged, it holds the same objects as before."""
    module: str | None
    if type(fn) is types.FunctionType:  # the common case: attributes every function has
        module, closure = fn.__module__, fn.__closure__
        defaults, kw = fn.__defaults__, fn.__kwdefaults__
        names: tuple[Any, ...] = (fn.__name__, fn.__qualname__)
    else:
        module, closure = getattr(fn, "__module__", None), getattr(fn, "__closure__", None)
        defaults, kw = getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)
        names = (getattr(fn, "__name__", None), getattr(fn, "__qualname__", None))
    main = getattr(sys.modules.get("__main__"), "__file__", None) if module == "__main__" else None
    state = (*names, module, main)
    if not (closure or defaults or kw):
        return state
    cells = tuple(_cell(c) for c in closure or ())
    kw_items = tuple(x for item in (kw or {}).items() for x in item)
    values = (defaults, *kw_items, *cells)
    return (*state, len(kw_items), len(cells), *values, *_types(values))


def _cell(cell: Any) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # not assigned yet: a later value is a change
        return _UNSET


def _types(value: object) -> Iterator[type]:
    yield type(value)
    if type(value) is tuple:  # a list, dict or set held live counts by its type only
        for item in value:
            yield from _types(item)


def _code_like(value: object, depth: int = 0) -> bool:
    """A function, class, code object or module, or a list, tuple or dict
    holding one (the functions a registry holds, `held_callables`)."""
    if isinstance(value, (types.FunctionType, types.MethodType, types.CodeType, type, types.ModuleType)):
        return True
    if depth >= 4:
        return False
    if isinstance(value, dict):
        return any(_code_like(v, depth + 1) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_code_like(v, depth + 1) for v in value)
