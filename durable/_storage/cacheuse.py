"""Hits and misses of each cached step in this process (`durable.cache_info()`).

Counted by `itertools.count` objects: `next()` on one is a single call in C,
so threads counting at once lose no count, without a lock on every hit."""

from __future__ import annotations

import itertools
import threading

_lock = threading.Lock()  # only to make a step's counters
# step name -> (hits, misses)
_counts: dict[str, tuple[itertools.count[int], itertools.count[int]]] = {}


def counts(name: str) -> tuple[int, int]:
    """(hits, misses) of a step in this process."""
    pair = _counts.get(name)
    if pair is None:
        return 0, 0
    return _value(pair[0]), _value(pair[1])


def count_use(name: str, hit: bool) -> None:
    pair = _counts.get(name)
    if pair is None:
        with _lock:
            pair = _counts.setdefault(name, (itertools.count(), itertools.count()))
    next(pair[0] if hit else pair[1])


def _value(counter: itertools.count[int]) -> int:
    """How many times `next` was called: what the counter gives next, read
    from its repr (`count(5)`), which leaves it as it is."""
    return int(repr(counter)[len("count(") : -1])
