"""Hits and misses of each cached step in this process (`durable.cache_info()`).

Counted by `itertools.count` objects: `next()` on one is a single call in C,
so threads counting at once lose no count, without a lock on every hit."""

from __future__ import annotations

import itertools
import threading

_lock = threading.Lock()  # only to make a step's counters
# (step name, which step of that name: `StepSpec.owner`) -> (hits, misses)
_counts: dict[tuple[str, str], tuple[itertools.count[int], itertools.count[int]]] = {}


def counts(name: str, owner: str | None = None) -> tuple[int, int]:
    """(hits, misses) in this process of the step of this name `owner`
    names, or of every step of the name."""
    with _lock:
        pairs = [p for (n, o), p in _counts.items() if n == name and owner in (None, o)]
    return sum(_value(p[0]) for p in pairs), sum(_value(p[1]) for p in pairs)


def count_use(step: tuple[str, str], hit: bool) -> None:
    pair = _counts.get(step)
    if pair is None:
        with _lock:
            pair = _counts.setdefault(step, (itertools.count(), itertools.count()))
    next(pair[0] if hit else pair[1])


def _value(counter: itertools.count[int]) -> int:
    """How many times `next` was called: what the counter gives next, read
    from its repr (`count(5)`), which leaves it as it is."""
    return int(repr(counter)[len("count(") : -1])
