"""A run's manifest as a record (its stored form: `manifest`)."""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any

from .._frozen import Compared, dataclass


@dataclass
class RunRecord(Compared):
    """A run's manifest: its workflow, definition, arguments and status."""
    workflow: str
    run_id: str
    fingerprint: str
    steps: dict[str, str]
    step_parts: dict[str, dict[str, str]]
    args_encoding: str
    args: bytes
    status: str = "running"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    result_encoding: str | None = None
    result: bytes | None = None
    error: dict[str, str] | None = None
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Arguments or a result over the blob threshold: a blob, `args`/`result` empty.
    args_blob: str | None = None
    result_blob: str | None = None
    # [kind, name] of each top-level position of the last completed attempt
    # (None: no record of its own): the steps to come, shown during a later one.
    plan: list[Any] | None = None
    # `keys.INCARNATION`: made with a new manifest, kept by a resume ("" before tokens).
    incarnation: str = ""  # (the stored form, summary and payload: `manifest`)

    def steps_total(self, position: int | None = None) -> int | None:
        """THE known total of a run: the top-level positions of its last
        completed attempt (or its fork source's), unless an attempt at
        `position` already went past it (the body changed since)."""
        total = self.extra.get("steps_total")
        if not isinstance(total, int) or (position is not None and position > total):
            return None
        return total
