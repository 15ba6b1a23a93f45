"""`durable.Cache` and the decorator's `cache=` option, checked once at
decoration: what `cache.py` keys and serves by."""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .._frozen import Frozen, dataclass
from ..errors import ConfigurationError

if TYPE_CHECKING:
    import inspect


@dataclass(frozen=True)
class Cache(Frozen):
    """How a step's outputs are cached across runs: `expire` bounds an
    entry's age (a `timedelta` or seconds), `ignore` names arguments left out
    of the key (`verbose`, a logger), `key` replaces the arguments by a key
    function's result (called with the step's arguments)."""

    expire: datetime.timedelta | float | None = None
    ignore: str | Sequence[str] = ()  # a tuple once made: a name or a list is taken too
    key: Callable[..., Any] | None = None
    # (expire in seconds, ignore as a set): read on every hit, worked out once.
    _limits: tuple[float | None, frozenset[str]] = field(
        init=False, repr=False, compare=False, default=(None, frozenset())
    )

    def __post_init__(self) -> None:
        if isinstance(self.ignore, str):  # ignore="verbose": one name, not letters
            object.__setattr__(self, "ignore", (self.ignore,))
        if not isinstance(self.ignore, (list, tuple, set, frozenset)) or not all(
            isinstance(n, str) for n in self.ignore
        ):
            raise ConfigurationError(f"Cache(ignore=...) takes argument names, not {self.ignore!r}")
        object.__setattr__(self, "ignore", tuple(self.ignore))
        if self.key is not None and not callable(self.key):
            raise ConfigurationError(f"Cache(key=...) must be a function, not {self.key!r}")
        if self.key is not None and self.ignore:
            raise ConfigurationError(
                "Cache(key=...) replaces the arguments in the key, so ignore= would have no "
                "effect; leave the ignored arguments out of what key returns instead"
            )
        seconds = _seconds(self.expire)
        object.__setattr__(self, "_limits", (seconds, frozenset(self.ignore)))

    @property
    def seconds(self) -> float | None:
        return self._limits[0]

    @property
    def ignored(self) -> frozenset[str]:
        return self._limits[1]


def _seconds(expire: object) -> float | None:
    if expire is None:
        return None
    if isinstance(expire, datetime.timedelta):
        seconds = expire.total_seconds()
    elif isinstance(expire, numbers.Real) and not isinstance(expire, bool):
        seconds = float(expire)
    else:
        raise ConfigurationError(
            f"Cache(expire=...) takes a datetime.timedelta or a number of seconds "
            f"(int or float), not {expire!r}"
        )
    if not seconds > 0:  # NaN too
        raise ConfigurationError(f"Cache(expire=...) must be positive, not {expire!r}")
    return seconds


def cache_option(
    cache: bool | Cache | None, *, persist: bool, signature: inspect.Signature | None, who: str
) -> Cache | None:
    """The decorator's `cache=`, checked once at decoration."""
    if cache is None or cache is False:
        return None
    option = Cache() if cache is True else cache
    if not isinstance(option, Cache):
        raise ConfigurationError(f"cache= takes True or durable.Cache(...), not {cache!r}")
    if not persist:
        raise ConfigurationError(
            f"step {who} has persist=False (its value is never written) and cache=: "
            "a cached output is written to the store. Drop one of the two."
        )
    params = signature.parameters if signature is not None else {}
    spread = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [n for n in option.ignore if n not in params and not spread]
    if unknown:
        raise ConfigurationError(
            f"Cache(ignore=...) of step {who} names {', '.join(map(repr, unknown))}, which "
            f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} of it"
        )
    return option
