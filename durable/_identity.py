"""PLACEHOLDER until the identity module lands (branch ident)."""

from __future__ import annotations

import uuid
from typing import Any

from . import _codec


def value_digest(value: Any) -> str:
    try:
        return _codec.canonical_digest(value)[:16]
    except _codec.NotCanonical:
        return "!" + uuid.uuid4().hex[:15]
