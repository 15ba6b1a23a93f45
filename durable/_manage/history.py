"""A run's history: one `StepInfo` per position, read from its records
without running any of the workflow's code (except unpickling an output for
its preview, which the store's `allow_pickle` governs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._storage import codec
from .._storage.base import Store
from .._storage.files import artifact_states
from .._storage.keys import Position, parse_name, position_key, record_name, top_level
from .._storage.records import Attempt, StepRecord, decode_stored, stored_bytes, unseal
from ..errors import CorruptRecordError, preview_of
from .runs import RunInfo, read_manifest, run_info


@dataclass(frozen=True)
class FailedAttempt:
    type: str
    message: str
    at: float


@dataclass(frozen=True)
class StepInfo:
    """One position of a run as `Workflow.history()` and `durable show` show it."""

    position: Position  # an int in the body; `PositionPath` (prints `2.0.1`) inside a task
    kind: str  # step, loop, sleep
    name: str
    status: str  # completed, failed, retrying, sleeping, pending
    fingerprint: str
    started: float | None
    ended: float | None
    duration: float | None
    attempts: int  # tries made, the successful one included
    failures: tuple[FailedAttempt, ...]  # each failed try, oldest first
    output_size: int | None  # encoded bytes; None when nothing was kept
    preview: str | None
    error: str | None  # the last failure, for a position that has not finished
    # files the step registered with artifact(): url, kind, size, mtime,
    # digest as recorded, and state now (present, missing, changed, unreachable)
    artifacts: tuple[dict[str, Any], ...] = ()


@dataclass
class _Raw:
    records: dict[Position, StepRecord]
    attempts: dict[Position, StepRecord]
    timers: dict[Position, float]


def history(store: Store, workflow: str, run_id: str) -> list[StepInfo]:
    return describe(store, workflow, run_id)[1]


def describe(store: Store, workflow: str, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
    """The run and its steps in position order."""
    info = run_info(store, workflow, run_id)  # checks both names first
    raw = _read(store, workflow, run_id)
    if info.status == "completed":
        _check_complete(store, info, len(raw.records))
    positions = sorted(set(raw.records) | set(raw.attempts) | set(raw.timers), key=position_key)
    steps = [_step(store, info, raw, p) for p in positions]
    return info, steps


def _check_complete(store: Store, info: RunInfo, found: int) -> None:
    """A completed run names how many operations it finished: fewer in the
    store means records were lost (a truncated log, deleted objects), which
    a shorter history must not hide."""
    manifest = read_manifest(store, info.workflow, info.run_id)
    expected = manifest.extra.get("operations")
    if isinstance(expected, int) and found < expected:
        why = (
            f"the run completed with {expected} finished operations but only {found} "
            "are in the store: records were lost (a truncated log or deleted objects)"
        )
        raise CorruptRecordError(info.run_id, None, f"{info.workflow}/{info.run_id}", why)


def _read(store: Store, workflow: str, run_id: str) -> _Raw:
    raw = _Raw({}, {}, {})
    for name, data in store.peek_records(workflow, run_id).items():
        parsed = parse_name(name)
        if parsed is None:
            continue
        head, pos = parsed
        body = unseal(data, store.signing_key, run_id=run_id, position=pos, name=name)
        if head == "timers":
            raw.timers[pos] = float(codec.unpack(body))
            continue
        try:
            rec = StepRecord.from_bytes(body)
        except Exception as e:
            raise CorruptRecordError(run_id, pos, name, f"undecodable: {e}") from e
        (raw.records if head == "steps" else raw.attempts)[pos] = rec
    return raw


def _step(store: Store, info: RunInfo, raw: _Raw, pos: Position) -> StepInfo:
    rec = raw.records.get(pos)
    if rec is not None:
        failures = _failures(rec.attempts)
        size, preview = _preview(store, info, rec)
        return StepInfo(
            pos, rec.kind, rec.name, "completed", rec.fingerprint, rec.started, rec.ended,
            max(rec.ended - rec.started, 0.0), len(failures) + 1, failures, size, preview, None,
            tuple(artifact_states(rec, store)),
        )  # fmt: skip
    # In flight: the body's next position, or an operation of a task created just before it.
    live = info.status == "running" and top_level(pos) == info.position
    tried = raw.attempts.get(pos)
    if tried is not None:
        failures = _failures(tried.attempts)
        last = failures[-1] if failures else None
        started = tried.started or (failures[0].at if failures else None)
        ended = last.at if last else None
        # A block's attempts record says "loop"; older ones and steps say nothing.
        kind = str(tried.extra.get("kind", "step"))
        return StepInfo(
            pos, kind, tried.name or "?", "retrying" if live else "failed", "", started, ended,
            None if started is None or ended is None else max(ended - started, 0.0),
            len(failures), failures, None, None, f"{last.type}: {last.message}" if last else None,
        )  # fmt: skip
    until = raw.timers[pos]
    return StepInfo(
        pos, "sleep", "sleep", "sleeping" if live else "pending", "sleep", None, until,
        None, 0, (), None, None, None,
    )  # fmt: skip


def _failures(attempts: list[Attempt]) -> tuple[FailedAttempt, ...]:
    return tuple(FailedAttempt(a.type, a.message, a.at) for a in attempts)


def _preview(store: Store, info: RunInfo, rec: StepRecord) -> tuple[int | None, str | None]:
    if not rec.persisted or rec.encoding is None:
        return None, "(not stored)"
    name = f"{info.workflow}/{info.run_id}/{record_name(rec.position)}"
    try:
        data = stored_bytes(store, (info.workflow, info.run_id), rec.value, rec.blob,
                            position=rec.position, name=name)  # fmt: skip
    except CorruptRecordError as e:
        return None, f"({e.key}: damaged or missing)"
    if data is None:
        return None, "(not stored)"
    try:
        value = decode_stored(store, rec.encoding, data, name=name)
    except Exception as e:
        kind = "pickled value" if rec.encoding == codec.PICKLE else "value"
        return len(data), f"<{kind}, {len(data)} bytes: not decoded here ({type(e).__name__})>"
    return len(data), preview_of(value)
