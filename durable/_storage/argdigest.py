"""The argument digest of a call's canonical bytes (`_core.callbytes`): what
a step record holds, or the bytes it is made of (`StepRecord.args_bytes`)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
from collections.abc import Callable
from typing import Any


def _builtin_sha256() -> Callable[[bytes], Any]:
    """CPython's own SHA-256 (`_sha2` from 3.12, `_sha256` before): the same digest without
    OpenSSL's set-up, a third cheaper on a call's few bytes; OpenSSL's stays for the large."""
    for module in ("_sha2", "_sha256"):
        with contextlib.suppress(ImportError, AttributeError):
            return importlib.import_module(module).sha256  # type: ignore[no-any-return]
    return hashlib.sha256


_small_sha256 = _builtin_sha256()
sha256 = hashlib.sha256
HEX = 32  # hex digits kept in records: 128 bits
_SMALL = 4096  # bytes up to which CPython's SHA-256 beats OpenSSL's


def digest_of(canonical: bytes) -> str:
    """The argument digest of a call whose canonical bytes these are."""
    h = _small_sha256(canonical) if len(canonical) <= _SMALL else sha256(canonical)
    digest: str = h.hexdigest()
    return digest[:HEX]
