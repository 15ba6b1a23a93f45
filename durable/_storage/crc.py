"""CRC32: zlib's polynomial and values, computed by ISA-L for large bodies
where it is installed (a dependency of the package).

zlib's own CRC32 runs at about 2-4 GB/s here; checking a 100 MB cached
array with it cost more than reading the array, and made a hit slower than
joblib's unchecked load, and summing a large step output twice on its way
to the run log (its envelope, its log entry) cost a fifth of encoding it.
ISA-L gives the same sums at over 40 GB/s, so an entry written with either
is checked by the other. Below `LARGE` bytes zlib answers (no call into
another module for a record of a hundred bytes), and ISA-L is loaded at
the first large body: `import durable` does not pay for it."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

LARGE = 1 << 15

_fast: Callable[[Any, int], int] | None = None


def crc32(data: Any, value: int = 0) -> int:
    """`zlib.crc32(data, value)`, by ISA-L when data is large."""
    if len(data) < LARGE:
        return zlib.crc32(data, value)
    return (_fast or _load())(data, value)


def _load() -> Callable[[Any, int], int]:
    global _fast
    try:
        from isal.isal_zlib import crc32 as fast
    except ImportError:  # a platform without an ISA-L wheel: the same sums, slower
        fast = zlib.crc32
    _fast = fast
    return fast
