"""Looking back at runs and cleaning up: listing, deleting, forking, gc.

Plain functions over a `Store` and a workflow name, so that the command line
can manage runs without importing the workflow's code; `Workflow.runs()`,
`.delete()` and `.fork()` delegate here."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import _codec, _runner
from ._engine import now
from ._errors import (
    ConfigurationError,
    CorruptRecordError,
    RunLockedError,
    RunNotFoundError,
    SerializationError,
)
from ._records import RunRecord, StepRecord, position_of, record_name, seal, unseal
from ._store import Store, check_key_part, open_store

LEASE_TTL = 30.0


@dataclass(frozen=True)
class RunInfo:
    """One run as `Workflow.runs()` and `durable runs` show it."""

    workflow: str
    run_id: str
    status: str  # running, completed, failed, suspended, interrupted, forked, corrupt
    fingerprint: str
    created: float
    updated: float
    steps: int  # finished operations
    position: int | None  # first position not finished; None once completed
    error: str | None = None  # "Type: message" of the failure or interruption
    reason: str | None = None  # why a suspended run waits


def list_runs(
    store: Store, workflow: str | None = None, *, status: str | None = None
) -> list[RunInfo]:
    """Every run (of one workflow, or of all), newest first. One listing per
    call and one batched read of the manifests."""
    keys = store.list(f"{workflow}/" if workflow else "")
    layout: dict[tuple[str, str], set[int]] = {}
    for key in keys:
        parts = key.split("/")
        if len(parts) >= 3:
            steps = layout.setdefault((parts[0], parts[1]), set())
            if parts[2] == "steps" and len(parts) == 4 and parts[3].isdigit():
                steps.add(int(parts[3]))
    manifests = store.get_many([f"{w}/{r}/run" for w, r in layout])
    infos = [
        _info(store, w, r, manifests[f"{w}/{r}/run"], steps)
        for (w, r), steps in layout.items()
        if f"{w}/{r}/run" in manifests
    ]
    if status is not None:
        infos = [i for i in infos if i.status == status]
    return sorted(infos, key=lambda i: (i.updated, i.run_id), reverse=True)


def run_info(store: Store, workflow: str, run_id: str) -> RunInfo:
    raw = store.load_manifest(workflow, run_id)
    if raw is None:
        raise RunNotFoundError(workflow, run_id, store.url)
    names = store.list(f"{workflow}/{run_id}/steps/")
    steps = {p for n in names if (p := position_of(n.split("/", 2)[2])) is not None}
    return _info(store, workflow, run_id, raw, steps)


def find_workflow(store: Store, run_id: str, workflow: str | None = None) -> str:
    """The workflow a run id belongs to; an error when none or several."""
    if workflow is not None:
        if store.load_manifest(workflow, run_id) is None:
            raise RunNotFoundError(workflow, run_id, store.url)
        return workflow
    owners = [w for w in store.workflows() if store.load_manifest(w, run_id) is not None]
    if not owners:
        raise RunNotFoundError("(any)", run_id, store.url)
    if len(owners) > 1:
        raise ConfigurationError(
            f"run id {run_id!r} exists in several workflows ({', '.join(owners)}); "
            "name one with --workflow"
        )
    return owners[0]


def read_manifest(store: Store, workflow: str, run_id: str) -> RunRecord:
    manifest = _runner.read_manifest(store, workflow, run_id)
    if manifest is None:
        raise RunNotFoundError(workflow, run_id, store.url)
    return manifest


def _info(store: Store, workflow: str, run_id: str, raw: bytes, steps: set[int]) -> RunInfo:
    try:
        m = _decode_manifest(store, workflow, run_id, raw)
    except CorruptRecordError as e:
        return RunInfo(workflow, run_id, "corrupt", "", 0.0, 0.0, len(steps), None, str(e))
    status = m.status
    # A holder that died (kill -9, power loss) never wrote its final status.
    if status == "running" and not store.is_held(workflow, run_id):
        status = "interrupted"
    position = None if status == "completed" else first_gap(steps)
    error = None if m.error is None else summarize_error(m.error)
    return RunInfo(
        workflow, run_id, status, m.fingerprint, m.created, m.updated, len(steps),
        position, error, m.reason,
    )  # fmt: skip


def _decode_manifest(store: Store, workflow: str, run_id: str, raw: bytes) -> RunRecord:
    key = f"{workflow}/{run_id}/run"
    body = unseal(raw, store.signing_key, run_id=run_id, position=None, name=key)
    try:
        return RunRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, None, key, f"undecodable: {e}") from e


def first_gap(positions: Iterable[int]) -> int:
    have, p = set(positions), 0
    while p in have:
        p += 1
    return p


def summarize_error(error: dict[str, str]) -> str:
    message = (error.get("message") or "").strip().splitlines()
    return f"{error.get('type', 'Error')}: {message[0] if message else ''}"[:300]


# -- delete, gc ---------------------------------------------------------------
def delete_run(store: Store, workflow: str, run_id: str) -> None:
    """Remove every object of a run. Refuses (RunLockedError) while a live
    process holds it."""
    check_key_part("run id", run_id)
    if not store.list(f"{workflow}/{run_id}/"):
        raise RunNotFoundError(workflow, run_id, store.url)
    lease = store.acquire(workflow, run_id, LEASE_TTL)
    try:
        store.delete_run(workflow, run_id, keep_lease=True)
    finally:
        lease.release()
    store.delete([f"{workflow}/{run_id}/lease"])


def gc(
    store: Store | str | None = None,
    *,
    keep_last: int | None = None,
    older_than: float | datetime.timedelta | None = None,
    status: str | Iterable[str] | None = None,
    dry_run: bool = False,
    workflow: str | None = None,
) -> list[RunInfo]:
    """Remove old runs of every workflow in a store; return what was (or, with
    `dry_run`, would be) removed. Per workflow, runs matching `status` (any
    status when None) beyond the `keep_last` newest, or last updated more than
    `older_than` ago (seconds or a timedelta), go. A run held by a live
    process is never removed."""
    if keep_last is None and older_than is None and status is None:
        raise ConfigurationError(
            "gc() needs at least one of keep_last, older_than or status; "
            "it never removes everything by default"
        )
    if keep_last is not None and keep_last < 0:
        raise ConfigurationError(f"keep_last must be >= 0, not {keep_last}")
    target = store if isinstance(store, Store) else open_store(store)
    wanted = {status} if isinstance(status, str) else set(status) if status else None
    cutoff = None if older_than is None else now() - _seconds(older_than)
    removed: list[RunInfo] = []
    for infos in _by_workflow(list_runs(target, workflow)):
        chosen = [i for i in infos if i.status != "running" and (not wanted or i.status in wanted)]
        if keep_last is not None:
            chosen = chosen[keep_last:]
        if cutoff is not None:
            chosen = [i for i in chosen if i.updated < cutoff]
        removed += [i for i in chosen if dry_run or _try_delete(target, i)]
    return removed


def keep_newest(store: Store, workflow: str, keep_last: int) -> list[RunInfo]:
    """`keep_last=N` on the decorator: after a run completes, drop the oldest
    completed runs of that workflow beyond the N newest."""
    return gc(store, keep_last=keep_last, status="completed", workflow=workflow)


def _try_delete(store: Store, info: RunInfo) -> bool:
    try:
        delete_run(store, info.workflow, info.run_id)
    except (RunLockedError, RunNotFoundError):
        return False  # started or removed by someone else meanwhile
    return True


def _by_workflow(infos: list[RunInfo]) -> list[list[RunInfo]]:
    groups: dict[str, list[RunInfo]] = {}
    for info in infos:
        groups.setdefault(info.workflow, []).append(info)
    return list(groups.values())


def _seconds(value: float | datetime.timedelta) -> float:
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)
    if seconds < 0:
        raise ConfigurationError(f"older_than must not be negative, not {value}")
    return seconds


# -- fork ---------------------------------------------------------------------
def fork_run(
    store: Store,
    workflow: str,
    run_id: str,
    at: int,
    *,
    new_run_id: str | None = None,
    mutate: Callable[[Any], Any] | None = None,
) -> str:
    """Create a run whose records are the source's before position `at`
    (`mutate` replaces the output at `at - 1`). Nothing is executed and the
    source is not touched. Returns the new run id."""
    source = read_manifest(store, workflow, run_id)
    new_id = check_key_part("run id", new_run_id or f"{run_id}-fork-{uuid.uuid4().hex[:6]}")
    if store.list(f"{workflow}/{new_id}/"):
        raise ConfigurationError(
            f"run {new_id!r} of {workflow!r} already exists; pick another new_run_id "
            f"or delete it first (durable rm {new_id})"
        )
    records = store.load_records(workflow, run_id)
    limit = first_gap(p for n in records if n.startswith("steps/") and (p := position_of(n)) is not None)
    if not 0 <= at <= limit or (mutate is not None and at == 0):
        low = 1 if mutate is not None else 0
        raise ConfigurationError(
            f"fork at={at} is out of range: run {run_id!r} has finished positions 0..{limit - 1}, "
            f"so at must be between {low} and {limit}"
        )
    lease = store.acquire(workflow, new_id, LEASE_TTL)
    try:
        for name, data in sorted(records.items()):
            if mutate is not None and name == record_name(at - 1):
                replaced = _mutated(store, workflow, (run_id, new_id), name, data, mutate)
                store.save_record(workflow, new_id, name, replaced)
            elif _position(name) < at:
                _copy_record(store, workflow, run_id, new_id, name, data)
        _write_fork_manifest(store, source, new_id, at)
    finally:
        lease.release()
    return new_id


def _position(name: str) -> int:
    head, _, tail = name.partition("/")
    return int(tail) if head in ("steps", "attempts", "timers") and tail.isdigit() else 1 << 62


def _copy_record(
    store: Store, workflow: str, source: str, target: str, name: str, data: bytes
) -> None:
    # Sealed bodies never name their run, so they (and their signatures) copy as they are.
    if name.startswith("steps/"):
        rec = _decode_record(store, source, name, data)
        if rec.blob is not None:
            blob = store.get_blob(workflow, source, rec.blob)
            if blob is None:
                raise CorruptRecordError(source, rec.position, f"blobs/{rec.blob}", "blob missing")
            store.put_blob(workflow, target, blob)
    store.save_record(workflow, target, name, data)


def _decode_record(store: Store, run_id: str, name: str, data: bytes) -> StepRecord:
    pos = position_of(name)
    body = unseal(data, store.signing_key, run_id=run_id, position=pos, name=name)
    try:
        return StepRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, pos, name, f"undecodable: {e}") from e


def _mutated(
    store: Store,
    workflow: str,
    runs: tuple[str, str],
    name: str,
    data: bytes,
    mutate: Callable[[Any], Any],
) -> bytes:
    from ._context import RunContext
    from ._engine import load_value

    source, target = runs
    rec = _decode_record(store, source, name, data)
    if not rec.persisted or rec.encoding is None:
        raise ConfigurationError(
            f"position {rec.position} ({rec.name}) kept no value (persist=False), "
            "so there is nothing to mutate; fork one position later or earlier"
        )
    value = mutate(load_value(RunContext(source, workflow, store), rec))
    try:
        rec.encoding, encoded = _codec.encode_value(value)
    except Exception as e:
        raise SerializationError(f"mutate() for {rec.name}", type(value).__qualname__, str(e)) from e
    rec.value, rec.blob = encoded, None
    if len(encoded) > store.blob_threshold:
        rec.value = None
        rec.blob = store.put_blob(workflow, target, seal(encoded, store.signing_key))
    rec.extra = {**rec.extra, "mutated": True}
    return seal(rec.to_bytes(), store.signing_key)


def _write_fork_manifest(store: Store, source: RunRecord, new_id: str, at: int) -> None:
    manifest = RunRecord(
        source.workflow, new_id, source.fingerprint, dict(source.steps),
        dict(source.step_parts), source.args_encoding, source.args, status="forked",
        created=now(), extra={"forked_from": source.run_id, "forked_at": at},
    )  # fmt: skip
    _runner.write_manifest(store, manifest)
