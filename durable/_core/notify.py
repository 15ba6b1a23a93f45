"""The engine's side of the event stream: builds events from a run's state
at the points where things happen (run begins and ends, an operation
replays, executes, fails or is retried). Per-operation events are built only
when `events.detailed()` said someone wants them as the run began."""

from __future__ import annotations

import time
from typing import Any

from .._storage.keys import Position, format_position
from .._storage.records import RunRecord, StepRecord
from .._valuetext import error_message
from . import events, logs, tracing  # noqa: F401  (the consumers subscribe on import)
from .context import RunState


def begin(
    ctx: RunState,
    before: RunRecord | None,
    *,
    policy: str,
    fingerprint: str,
    started: float,
    parent: dict[str, Any] | None,
) -> None:
    """The run's body is about to run. A run with records to replay
    announces itself at its first live operation (`went_live`), when it is
    known how many replayed; a run without records announces itself now."""
    # Asked once per run, not per operation: a step must stay cheap.
    ctx.watched = events.detailed()
    ctx.intro = {
        "resumed": before is not None,
        "steps_total": None if before is None else before.steps_total(),
        "parent": None if parent is None else str(parent.get("run_id")),
        "started": started,
    }
    if before is not None and before.status == "running":
        # We hold the lease, so the process that left it running is gone.
        events.emit(events.LeaseTakenOver(ctx.run_id, ctx.workflow))
    if policy == "rebase" and before is not None and before.fingerprint != fingerprint:
        old = before.fingerprint
        events.emit(events.RunRebased(ctx.run_id, ctx.workflow, old, fingerprint))
    if not ctx.records:
        announce(ctx)


def announce(ctx: RunState) -> None:
    """Emit RunStarted (once), then the replays held back until now."""
    if ctx.announced:
        return
    ctx.announced = True
    intro = ctx.intro
    events.emit(
        events.RunStarted(
            ctx.run_id,
            ctx.workflow,
            resumed=bool(intro.get("resumed")),
            resume_position=ctx.first_live if ctx.replayed else None,
            replayed=ctx.replayed,
            steps_total=intro.get("steps_total"),
            parent=intro.get("parent"),
            started=float(intro.get("started", 0.0)),
        )
    )
    held, ctx.held = ctx.held, []
    for event in held:
        events.emit(event)


def _about(rec: StepRecord) -> dict[str, Any]:
    """The fields every operation event takes from its record."""
    return {
        "position": format_position(rec.position),
        "name": rec.name,
        "attempt": len(rec.attempts),
        "fingerprint": rec.fingerprint,
        "kind": rec.kind,
    }


def replayed(ctx: RunState, rec: StepRecord) -> None:
    if not ctx.watched:
        return
    event = events.StepReplayed(ctx.run_id, ctx.workflow, **_about(rec))
    if ctx.announced:
        events.emit(event)
    else:
        ctx.held.append(event)


def executed(ctx: RunState, rec: StepRecord) -> None:
    if not ctx.watched:
        return
    announce(ctx)
    events.emit(
        events.StepExecuted(
            ctx.run_id, ctx.workflow, duration=max(0.0, rec.ended - rec.started), **_about(rec),
            again=rec.extra.get("reopened"),
        )
    )


def failed(
    ctx: RunState,
    pos: Position,
    name: str,
    fingerprint: str,
    attempt: int,
    exc: BaseException,
    *,
    started: float,
    retry_in: float | None = None,
    kind: str = "step",
    of_call: tuple[int, int] = (0, 1),
) -> None:
    """Try `attempt` at pos (the run's count) raised exc; `of_call`: that
    try of the call's budget (0 first) and the tries the budget allows;
    `retry_in` seconds until the next try, None when none follows. A retry is always told: it is logged at
    WARNING, which a logger at INFO shows without asking for every step,
    and a failed try already costs more than building its event."""
    if not ctx.watched and retry_in is None:
        return
    announce(ctx)
    common: dict[str, Any] = {
        "position": format_position(pos),
        "name": name,
        "attempt": attempt,
        "fingerprint": fingerprint,
        "duration": max(0.0, time.time() - started) if started else 0.0,
        "kind": kind,
        "error": error_text(exc),
        "exception": exc,
        "call_attempt": of_call[0],
        "max_attempts": of_call[1],
    }
    if retry_in is None:
        events.emit(events.StepFailed(ctx.run_id, ctx.workflow, **common))
    else:
        events.emit(events.StepRetried(ctx.run_id, ctx.workflow, delay=retry_in, **common))


def ended(ctx: RunState, event: events.Event) -> None:
    """The run ends (completed, failed, suspended, interrupted)."""
    announce(ctx)
    events.emit(event)


def run_failed(ctx: RunState, exc: BaseException) -> None:
    text = error_text(exc)
    ended(ctx, events.RunFailed(ctx.run_id, ctx.workflow, error=text, exception=exc))


def run_interrupted(ctx: RunState, exc: BaseException) -> None:
    text = error_text(exc)
    ended(ctx, events.RunInterrupted(ctx.run_id, ctx.workflow, error=text, exception=exc))


def error_text(exc: BaseException) -> str:
    text = error_message(exc)
    return f"{type(exc).__qualname__}: {text}" if text else type(exc).__qualname__
