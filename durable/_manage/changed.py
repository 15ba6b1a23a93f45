"""The records a rerun left behind: made by code changed since, or after
such a record. A resume with `on_change="rerun"` that stopped (suspended,
failed, killed) before it reached a changed step leaves them; no resume
replays them but a rebase, so `durable show`, `history()` and a listing
count them as not finished."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .._storage.keys import Position, top_level
from .._storage.records import StepRecord
from .runs import RunInfo

if TYPE_CHECKING:  # history imports this module
    from .history import StepInfo


def outdated(code: dict[str, str], rec: StepRecord) -> bool:
    """Whether a step's record was made by other code than the run's last
    attempt ran under its name (`name#2` for a second step of that name). A
    completed run's records are its result's, whatever code made them (no
    `code`)."""
    if rec.kind != "step" or rec.name not in code:
        return False
    return rec.fingerprint not in {
        fp for key, fp in code.items() if key == rec.name or key.startswith(f"{rec.name}#")
    }


def after_changed(steps: list[StepInfo]) -> list[StepInfo]:
    """The steps with those after the first `changed` one `changed` too: a
    rerun discards every record from the first changed step on, whatever
    code made them (`c` after an edited `b` ran on b's old output)."""
    first = min((top_level(s.position) for s in steps if s.status == "changed"), default=None)
    if first is None:
        return steps
    return [
        replace(s, status="changed") if s.status == "completed" and top_level(s.position) > first else s
        for s in steps
    ]


def unfinished(info: RunInfo, changed: list[Position]) -> RunInfo:
    """The run as its `changed` records leave it: not finished steps, the
    next position at the first of them (where the run waits, when it does)."""
    if not changed:
        return info
    body = [p for p in changed if isinstance(p, int)]
    position = info.position if info.position is None or not body else min(info.position, *body)
    top = None if info.top_level is None else info.top_level - len(body)
    return replace(info, steps=info.steps - len(changed), position=position, top_level=top)
