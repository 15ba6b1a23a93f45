"""`durable.redact(value)`: a value that is never written to a store.

A step that returns one (alone, or inside lists, tuples, sets and dict
values) leaves a placeholder record without a value, like `persist=False`,
and runs again on every resume. Anything that tries to pickle it — a
workflow returning it, an argument carrying it, a dataclass holding it — is
refused instead of leaking the secret into the store."""

from __future__ import annotations

from typing import Any, Generic, NoReturn, TypeVar, overload

T = TypeVar("T")

# Deeper nesting than this is not searched: it is refused by pickling instead.
_MAX_DEPTH = 8


class NeverWritten(TypeError):
    """Raised when something tries to pickle a `Redacted` (a TypeError, as
    pickling any unpicklable value raises)."""


class Redacted(Generic[T]):
    """A secret in transit between steps. Read it with `.value`; its repr
    never shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value = value

    @property
    def value(self) -> T:
        return self._value

    def __repr__(self) -> str:
        return "durable.redact(***)"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        # Pickling is how a value would reach the store (or a worker); refuse
        # it so that a secret can only travel in memory.
        raise NeverWritten(
            "a durable.redact() value is never written: return it from a step on its own "
            "(or in a list/dict), and do not return it from the workflow or pass it to "
            "loop_over workers"
        )

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(None)

    def __copy__(self) -> Redacted[T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Redacted[T]:
        return self


@overload
def redact(value: Redacted[T]) -> Redacted[T]: ...
@overload
def redact(value: T) -> Redacted[T]: ...
def redact(value: Any) -> Redacted[Any]:
    """Wrap value so that durable never writes it: a step returning it records
    a placeholder and runs again on resume. Unwrap with `.value`."""
    return value if isinstance(value, Redacted) else Redacted(value)


def holds_redacted(value: Any, depth: int = 0) -> bool:
    """True when value is, or plainly contains, a `Redacted`."""
    if isinstance(value, Redacted):
        return True
    if depth >= _MAX_DEPTH:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(holds_redacted(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(holds_redacted(v, depth + 1) for v in value.values())
    return False
