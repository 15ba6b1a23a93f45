"""A run's history: the arguments it started with (position -1), one
`StepInfo` per position, read from its records without running any of the
workflow's code (except unpickling an output for its preview or `value`,
which the store's `allow_pickle` governs), then the steps still to come
when a completed attempt (or the fork source) showed them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from .._frozen import Compared, Frozen, dataclass
from .._storage.base import Store
from .._storage.files import artifact_states
from .._storage.keys import (
    Position,
    item_of,
    parse_name,
    position_key,
    top_level,
)
from .._storage.noted import lost
from .._storage.records import (
    TRIES_KIND,
    Attempt,
    RunRecord,
    StepRecord,
    unseal,
)
from .._storage.timers import timer_of
from .._valuetext import preview_of
from ..errors import CorruptRecordError
from .changed import after_changed, outdated, unfinished
from .output import output_loader, output_preview
from .reads import reading_run
from .runs import RunInfo, read_manifest, run_info


@dataclass(frozen=True)
class FailedAttempt(Frozen):
    """One failed try of a step: its exception's type and message, and when."""

    type: str
    message: str
    at: float


@dataclass(frozen=True)
class StepInfo(Frozen):
    """One position of a run as `Workflow.history()` and `durable show` show it."""

    position: Position  # an int in the body; `PositionPath` (prints `2.0.1`) inside a task
    kind: str  # initial, step, loop, sleep, input (a wait_for), workflow (a child run)
    name: str
    # completed, failed, retrying, sleeping, running, interrupted, pending; changed: a
    # record made by code changed since, that no resume replays but a rebase
    status: str
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
    _load: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    child: str | None = None  # the run id of the child run a `workflow` position ran

    @property
    def value(self) -> Any:
        """The recorded output, read from the store now under its pickle and
        signing policy (a refused or damaged value raises, never a wrong
        one); None when the position kept no value (not finished, pending,
        `persist=False`). For the "initial" entry, the run's arguments."""
        return None if self._load is None else self._load()


@dataclass
class _Raw(Compared):
    """A run's records as read from the store, before they are shown."""

    records: dict[Position, StepRecord]
    attempts: dict[Position, StepRecord]
    timers: dict[Position, float]
    # checkpointed items of a loop block, by block: (their results' ids, the block's name)
    items: dict[Position, tuple[set[str], str]] = field(default_factory=dict)
    plan: list[Any] = field(default_factory=list)
    # The fingerprints of the code the run's last attempt ran, by step name
    # (`RunRecord.steps`); none for a completed run (see `changed.outdated`).
    code: dict[str, str] = field(default_factory=dict)


def history(store: Store, workflow: str, run_id: str) -> list[StepInfo]:
    info, steps = describe(store, workflow, run_id)
    return [initial_step(info), *steps]


def describe(store: Store, workflow: str, run_id: str) -> tuple[RunInfo, list[StepInfo]]:
    """The run and its steps in position order, the pending ones last."""
    info = run_info(store, workflow, run_id)  # checks both names first
    with reading_run(workflow, run_id):
        manifest = read_manifest(store, workflow, run_id)
        raw = read_raw(store, workflow, run_id)
    raw.plan = manifest.plan or []
    if info.status == "completed":
        _check_complete(info, manifest, raw.records)
    else:
        raw.code = dict(manifest.steps or {})
    found = set(raw.records) | set(raw.attempts) | set(raw.timers) | set(raw.items)
    positions = sorted(found, key=position_key)
    steps = after_changed([_step(store, info, raw, p) for p in positions])
    info = unfinished(info, [s.position for s in steps if s.status == "changed"])
    return info, steps + _pending(info, manifest.plan, {top_level(p) for p in positions})


def initial_step(info: RunInfo) -> StepInfo:
    """Position -1: the arguments the run was started (or last resumed) with."""
    try:
        preview = preview_of(info.arguments)
    except Exception as e:  # as for an output's preview: `value` raises, the listing does not
        preview = f"<arguments: not decoded here ({type(e).__name__})>"
    return StepInfo(
        -1, "initial", "initial", "completed", info.fingerprint, info.created, info.created,
        0.0, 0, (), None, preview, None, (), lambda: info.arguments,
    )  # fmt: skip


def _pending(info: RunInfo, plan: list[Any] | None, seen: set[int]) -> list[StepInfo]:
    """The positions the last completed attempt had beyond where this one is."""
    if not plan or info.status == "completed" or info.steps_total is None:
        return []
    start = info.position or 0
    return [
        _to_come(p, str(entry[0]), str(entry[1]))
        for p, entry in enumerate(plan)
        if p >= start and p not in seen and isinstance(entry, list) and len(entry) == 2
    ]


def _to_come(pos: int, kind: str, name: str) -> StepInfo:
    return StepInfo(pos, kind, name, "pending", "", None, None, None, 0, (), None, None, None)


def _check_complete(info: RunInfo, manifest: RunRecord, found: dict[Position, Any]) -> None:
    """A completed run notes the operations it finished (`noted`): fewer in
    the store means records were lost (a truncated log, deleted objects),
    which a shorter history must not hide."""
    missing = lost(manifest.extra, found)
    if missing is not None:
        at = f" (none at position {', '.join(map(str, missing[1][:10]))})" if missing[1] else ""
        why = (
            f"the run completed with {missing[0]} finished operations but only {len(found)} "
            f"are in the store{at}: records were lost (a truncated log or deleted objects)"
        )
        raise CorruptRecordError(info.run_id, None, f"{info.workflow}/{info.run_id}", why)


def read_raw(store: Store, workflow: str, run_id: str) -> _Raw:
    raw = _Raw({}, {}, {})
    for name, data in store.peek_records(workflow, run_id).items():
        item = item_of(name)
        if item is not None:
            _count_item(store, raw, (run_id, item[0]), name, data)
            continue
        parsed = parse_name(name)
        if parsed is None:
            continue
        head, pos = parsed
        body = unseal(data, store.signing_key, run_id=run_id, position=pos, name=name)
        if head == "timers":
            raw.timers[pos] = timer_of(body)[0]
            continue
        try:
            rec = StepRecord.from_bytes(body)
        except Exception as e:
            raise CorruptRecordError(run_id, pos, name, f"undecodable: {e}") from e
        (raw.records if head == "steps" else raw.attempts)[pos] = rec
    return raw


def _count_item(
    store: Store, raw: _Raw, where: tuple[str, Position], name: str, data: bytes
) -> None:
    """An item's kept result counts once: one moved to its item's new index
    (`_fanout.moves`) stays at the old one too until written over, both
    copies with one id. An item's failed tries (`_fanout.tries`) are no result."""
    run_id, block = where
    kept, label = raw.items.get(block, (set(), ""))
    body = unseal(data, store.signing_key, run_id=run_id, position=block, name=name)
    try:
        rec = StepRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, block, name, f"undecodable: {e}") from e
    if rec.kind != TRIES_KIND:
        rid = rec.extra.get("kept")
        kept.add(rid if isinstance(rid, str) else name)  # kept by a version without ids
    raw.items[block] = (kept, label or rec.name)


def _step(store: Store, info: RunInfo, raw: _Raw, pos: Position) -> StepInfo:
    rec = raw.records.get(pos)
    if rec is not None:
        failures = _failures(rec.attempts)
        size, preview = output_preview(store, info, rec)
        status = "changed" if outdated(raw.code, rec) else "completed"
        return StepInfo(
            pos, rec.kind, rec.name, status, rec.fingerprint, rec.started, rec.ended,
            max(rec.ended - rec.started, 0.0), len(failures) + 1, failures, size, preview, None,
            tuple(artifact_states(rec, store)), output_loader(store, info.workflow, info.run_id, rec),
            rec.extra.get("child", {}).get("run_id"),
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
            len(failures), failures, None, _checkpointed(raw, pos),
            f"{last.type}: {last.message}" if last else None,
            child=tried.extra.get("child", {}).get("run_id"),
        )  # fmt: skip
    if pos in raw.items:
        return _loop_in_flight(raw, pos, live)
    until = raw.timers[pos]
    return StepInfo(
        pos, "sleep", "sleep", "sleeping" if live else "pending", "sleep", None, until,
        None, 0, (), None, None, None,
    )  # fmt: skip


def _loop_in_flight(raw: _Raw, pos: Position, live: bool) -> StepInfo:
    """A loop block with checkpointed items and no record yet: running now,
    or left by an attempt that stopped (its items are reused on resume)."""
    return StepInfo(
        pos, "loop", raw.items[pos][1], "running" if live else "interrupted", "", None, None,
        None, 0, (), None, _checkpointed(raw, pos), None,
    )  # fmt: skip


def _checkpointed(raw: _Raw, pos: Position) -> str | None:
    """A block's items kept so far, which a resume does not run again."""
    if pos not in raw.items:
        return None
    done = len(raw.items[pos][0])
    return f"{done} item{'s' if done != 1 else ''} checkpointed"


def _failures(attempts: list[Attempt]) -> tuple[FailedAttempt, ...]:
    return tuple(FailedAttempt(a.type, a.message, a.at) for a in attempts)
