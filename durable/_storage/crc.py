"""CRC32 for large bodies: zlib's polynomial and values, computed by ISA-L
where it is installed (a dependency of the package).

zlib's own CRC32 runs at about 2 GB/s here; checking a 100 MB cached array
with it cost more than reading the array, and made a hit slower than
joblib's unchecked load. ISA-L gives the same sums at over 40 GB/s, so an
entry written with either is checked by the other. Loaded only by what
checks large bodies (`cacheblob`): `import durable` does not pay for it."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

crc32: Callable[[Any], int]
try:
    from isal.isal_zlib import crc32 as _isal_crc32
except ImportError:  # a platform without an ISA-L wheel: the same sums, slower
    crc32 = zlib.crc32
else:
    crc32 = _isal_crc32
