"""Frozen dataclasses whose methods are written once. `@dataclass(frozen=True)`
compiles a `__setattr__` and a `__delattr__` for each class, and `eq` and
`repr` an `__eq__`, a `__hash__` and a `__repr__`, as its module is imported,
in every process: the 16 events (`_core.events`) cost 51M instructions, 27M
of them the frozen pair. A class made by this module's `dataclass` that
derives from `Frozen` has these five from `Frozen`, behaving as the
generated ones do; type checkers see `dataclasses.dataclass` (read-only
fields). Not for a public class a user may subclass: a frozen dataclass
cannot derive from one that is not. Below every layer; imports nothing of
durable."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(**options: Any) -> Any:
        """`dataclasses.dataclass` with `frozen`, `eq` and `repr` left to `Frozen`."""
        return dataclasses.dataclass(**{**options, "frozen": False, "eq": False, "repr": False})


class Frozen:
    """Assignment and deletion refused (`__init__` sets each field, once);
    equal when of one class with equal compared fields; hashed and shown by
    those fields, as `@dataclass(frozen=True)` does."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        own = self.__dict__
        if name in own or name not in _names(type(self)):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        own[name] = value

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _compared(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in _fields(self) if f.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"


def _fields(obj: Any) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(obj)


def _names(cls: type) -> frozenset[str]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(f.name for f in _fields(cls))
    return names


_NAMES: dict[type, frozenset[str]] = {}  # a class -> its fields' names
