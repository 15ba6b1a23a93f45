"""Dataclasses whose methods are written once. `@dataclass(frozen=True)`
compiles a `__setattr__` and a `__delattr__` for each class, and `eq` and
`repr` an `__eq__`, a `__hash__` and a `__repr__`, as its module is imported,
in every process: the 16 events (`_core.events`) cost 51M instructions, 27M
of them the frozen pair. A class made by this module's `dataclass` that
derives from `Frozen` has these five from it, one that derives from
`Compared` (not frozen) the `__eq__` and `__repr__`, behaving as the
generated ones do; type checkers see `dataclasses.dataclass` (read-only
fields). A user's `@dataclass(frozen=True)` subclass of one is refused (a
frozen dataclass cannot derive from one that is not): the events are not
made to be subclassed. Below every layer; imports nothing of durable."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls: Any = None, /, **options: Any) -> Any:
        """`dataclasses.dataclass`, `frozen`, `eq` and `repr` left to the base class."""
        made = dataclasses.dataclass(**{**options, "frozen": False, "eq": False, "repr": False})
        return made if cls is None else made(cls)


F = TypeVar("F", bound="Frozen")


class _Fields:
    """Equal when of one class with equal compared fields, shown by its
    fields: the `__eq__` and `__repr__` `@dataclass` generates."""

    __slots__ = ()

    def _compared(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in _fields(self) if f.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"


class Frozen(_Fields):
    """Assignment and deletion refused (but by `__init__`), hashed by the
    compared fields: `@dataclass(frozen=True)`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        # Only the class's own `__init__` sets its fields (a frozen one does so
        # with `object.__setattr__`). Not through `__dict__`: touched, it
        # would make every later read of the instance's attributes slower.
        init = getattr(type(self).__init__, "__code__", None)
        if sys._getframe(1).f_code is not init or name not in _names(type(self)):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._compared())


class Compared(_Fields):
    """Unhashable, as `@dataclass` (not frozen) makes a class that compares."""

    __slots__ = ()


def made(cls: type[F], *values: Any) -> F:
    """`cls(*values)` of a `Frozen` dataclass given every field, in `fields`
    order, that has no `__post_init__`: the same instance, without the check
    of `__setattr__` its `__init__` passes for each field (a Python call a
    field: 47,000 instructions for a `Run`, built at every re-call of a
    completed run). A test holds it equal to the class call."""
    names = _ORDER.get(cls)
    if names is None:
        assert issubclass(cls, Frozen) and not hasattr(cls, "__post_init__"), cls
        names = _ORDER[cls] = tuple(f.name for f in _fields(cls))
    self = object.__new__(cls)
    for name, value in zip(names, values, strict=True):
        object.__setattr__(self, name, value)
    return self


def _fields(obj: Any) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(obj)


def _names(cls: type) -> frozenset[str]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(f.name for f in _fields(cls))
    return names


_NAMES: dict[type, frozenset[str]] = {}  # a class -> its fields' names
_ORDER: dict[type, tuple[str, ...]] = {}  # a class -> its fields' names in order (`made`)
