"""A module of helpers for tests/test_body_fills.py: a global its function
fills, and a step of its own reading globals another module's body fills."""

from __future__ import annotations

from typing import Any

import durable

CONFIG: dict[str, Any] = {}
SEEN: list[str] = []


def configure(scale: float) -> None:
    """Fills this module's global with what a workflow body passes."""
    _put("scale", scale)


def _put(key: str, value: Any) -> None:
    CONFIG[key] = value


@durable.step
def configured_sum(xs: list[int]) -> int:
    """A step of this module reading its global, filled by a body elsewhere."""
    SEEN.append("configured_sum")
    return int(sum(xs) * CONFIG["scale"])
