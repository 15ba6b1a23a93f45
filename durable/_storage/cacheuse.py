"""Hits and misses of each cached step in this process (`durable.cache_info()`)."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_counts: dict[str, list[int]] = {}  # step name -> [hits, misses]


def counts(name: str) -> tuple[int, int]:
    """(hits, misses) of a step in this process."""
    hits, misses = _counts.get(name, [0, 0])
    return hits, misses


def count_use(name: str, hit: bool) -> None:
    with _lock:
        count = _counts.get(name)
        if count is None:
            count = _counts[name] = [0, 0]
        count[0 if hit else 1] += 1
