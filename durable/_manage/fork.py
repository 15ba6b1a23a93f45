"""Forking: a new run that starts with a past run's records before a
position (the output just before it optionally replaced), then continues
live from there. The source run is never touched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errortext import shell_words
from .._storage.base import Store
from .._storage.clock import now
from .._storage.keycheck import check_key_part, check_names
from .._storage.keys import (
    Position,
    is_step_record,
    new_incarnation,
    position_key,
    position_of,
    record_name,
)
from .._storage.lease import LEASE_TTL
from .._storage.manifest import read_manifest as read_checked
from .._storage.manifest import write_manifest
from .._storage.noted import note, note_synced
from .._storage.records import INPUT_KIND, RunRecord
from ..errors import ConfigurationError, CorruptRecordError, IntegrityError, RunNotFoundError
from .forkcopy import before, copy_blob, copy_records, decode_record
from .reads import forking, run_objects
from .runs import first_gap, read_manifest


@forking
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
    check_names(workflow, run_id)
    if not isinstance(at, int) or isinstance(at, bool):
        raise ConfigurationError(
            f"the position to fork at (at=, durable fork --at) must be an int, a top-level "
            f"position as `durable show` lists them, not {at!r}; nothing was forked"
        )
    if mutate is not None and not callable(mutate):  # it failed inside the copy
        raise ConfigurationError(
            f"fork(mutate=...) takes a function of the output recorded at position at - 1, "
            f"returning its replacement; not {mutate!r}; nothing was forked"
        )
    source = read_manifest(store, workflow, run_id)
    import uuid  # a fork's own: every command loaded it, and platform with it

    new_id = check_key_part("run id", new_run_id or f"{run_id}-fork-{uuid.uuid4().hex[:6]}")
    # A run is its manifest: objects without one are a fork's (it writes its manifest last) or a
    # removal's cut short, which no call replays (`outcome.without_leftovers`); a lease alone too.
    if store.peek_manifest(workflow, new_id) is not None:
        raise _taken(workflow, new_id)
    records = store.peek_records(workflow, run_id)
    finished = _finished(records, source.status == "completed")
    limit = first_gap(finished)
    if not 0 <= at <= limit or (mutate is not None and at == 0):
        low = 1 if mutate is not None else 0
        # The first position not finished bounds a fork, whatever finished after
        # it (a failed step the body caught): name it, not a range "0..-1".
        # A completed run has no unfinished position, unless its body caught a
        # failed step: its positions end there.
        why = (
            f"run {run_id!r} completed with positions 0 to {limit - 1}"
            if source.status == "completed" and max(finished, default=-1) < limit
            else f"position {limit} of run {run_id!r} is not finished ({_unfinished(store, source)})"
        )
        why = "positions count from 0" if at < 0 else f"a fork copies the positions finished from 0 on, and {why}"
        raise _gone_meanwhile(store, source) or ConfigurationError(
            f"fork position {at} is out of range: {why}, so the position to fork at (at=, durable fork --at) must "
            f"be between {low} and {limit}"
            + (" (mutate= replaces the output at at - 1)" if low else "")
        )
    if mutate is not None and record_name(at - 1) not in records:  # only its tasks' steps' records
        raise ConfigurationError(
            f"fork(mutate=...) replaces the output recorded at position at - 1 = {at - 1}, and position "
            f"{at - 1} of run {run_id!r} has none of its own (only the records of the asyncio tasks made "
            f"there); fork at another position, or without mutate=; nothing was forked"
        )
    lease = store.acquire(workflow, new_id, LEASE_TTL)
    # Again under the lease: another fork may have made the run since the
    # listing. The read also tells the store which manifest it writes over
    # (none): one it had seen before `durable rm` removed the run made the
    # fork's write look like another holder's (LeaseLostError).
    try:
        if store.load_manifest(workflow, new_id) is not None:
            raise _taken(workflow, new_id)  # not ours to remove
        if run_objects(store, workflow, new_id):  # left over: made again, the fork would append to them
            store.delete_run(workflow, new_id, keep_lease=True)
    except BaseException:
        lease.release()
        raise
    token = new_incarnation() if store.incarnations else ""  # a new run: a new folder
    store.note_incarnation(workflow, new_id, token)  # for the records copied before the manifest
    try:
        # Written as a run writes them: one sync at the end under "batch",
        # before the manifest naming them is written.
        store.open_run(workflow, new_id)
        try:
            copy_records(store, workflow, (run_id, new_id), records, at, mutate)
        finally:
            synced = store.end_run(workflow, new_id)
        if source.args_blob is not None:  # large arguments live in a blob of their run
            copy_blob(store, workflow, (run_id, new_id), source.args_blob, None)
        waits = _waits_after(store, source, records, at)
        # Read after the manifest, the records may be another run's: one
        # started afresh under the id since a removal (same folder on disk).
        if (gone := _gone_meanwhile(store, source)) is not None:
            raise gone
        copied = [p for n in records if is_step_record(n) and before(n, at) if (p := position_of(n)) is not None]
        _write_fork_manifest(store, source, (new_id, token), at, waits, copied, synced)
    except BaseException as e:
        # A half-made fork would block its id forever: leave nothing behind.
        store.delete_held_run(workflow, new_id, lease)  # the lease too, in any store's layout
        gone = _gone_meanwhile(store, source) if isinstance(e, CorruptRecordError) else None
        if gone is not None:
            raise gone from e
        raise
    lease.release()
    return new_id


def _finished(records: dict[str, bytes], completed: bool) -> set[int]:
    """The top-level positions a fork may copy. A task the body made keeps
    no record of its own, only its operations' (`1.0`, `1.1.0`): once the
    run completed every task had ended, so its position is finished too."""
    steps = [p for n in records if is_step_record(n) and (p := position_of(n)) is not None]
    return {position_key(p)[0] for p in steps} if completed else {p for p in steps if isinstance(p, int)}


def _unfinished(store: Store, source: RunRecord) -> str:
    if source.status != "running":
        return "it failed or was not reached"
    if store.is_held(source.workflow, source.run_id):
        return "the run is marked running: that step may be executing now; fork again once it has finished"
    # Marked running by a holder that died (`durable runs`: interrupted): it never finishes by itself.
    return "the run was interrupted: its process died before that step finished"


def _gone_meanwhile(store: Store, source: RunRecord) -> RunNotFoundError | None:
    """The error of a source removed (`durable rm`, gc) since its manifest
    was read, None while it is still that run. A fork holds no lease of its
    source, so a removal may land between its reads: what it then misses
    (records, a blob) is gone, not damaged nor unfinished."""
    try:
        there = read_checked(store, source.workflow, source.run_id)
    except (CorruptRecordError, IntegrityError):
        return None  # still there: its own error says what is wrong with it
    if there is not None and (there.created, there.incarnation) == (source.created, source.incarnation):
        return None
    gone = RunNotFoundError(source.workflow, source.run_id, store.url)
    gone.args = (
        f"run {source.run_id!r} of {source.workflow!r} was removed while it was being forked "
        f"(durable rm or gc, from another process){'' if there is None else ', then started afresh'}; "
        f"nothing was forked. `durable {shell_words('runs', source.workflow)}` lists the runs there are",
    )
    return gone


def _taken(workflow: str, new_id: str) -> ConfigurationError:
    return ConfigurationError(
        f"run {new_id!r} of {workflow!r} already exists; pick another new run id "
        f"(new_run_id=, durable fork --new-run-id) or delete it first "
        # --workflow: another workflow may have a run of that id too.
        f"(durable {shell_words('rm', new_id, '--workflow', workflow)})"
    )


def _waits_after(
    store: Store, source: RunRecord, records: dict[str, bytes], at: int
) -> list[str]:
    """The names of the source's `wait_for`s at or after `at` (its records,
    the plan of its last completed attempt, its own source's for a fork not
    run yet): a resume of the fork may answer them anew (`usable_inputs`)."""
    plan = source.plan or []
    names = {e[1] for e in plan[at:] if isinstance(e, list) and e[:1] == [INPUT_KIND]}
    for name, data in records.items():
        if not is_step_record(name) or before(name, at):
            continue
        try:
            rec = decode_record(store, source.run_id, name, data)
        except (CorruptRecordError, IntegrityError):
            continue  # unknown, so not a wait still to come: its answer is refused
        if rec.kind == INPUT_KIND:
            names.add(rec.name)
    inherited = source.extra.get("waits_after") if source.status == "forked" else []
    return sorted(names.union(inherited if isinstance(inherited, list) else []))


def _write_fork_manifest(
    store: Store, source: RunRecord, new: tuple[str, str], at: int, waits: list[str],
    copied: list[Position], synced: int | None,
) -> None:
    manifest = RunRecord(
        source.workflow, new[0], source.fingerprint, dict(source.steps),
        dict(source.step_parts), source.args_encoding, source.args, status="forked",
        created=now(), extra={"forked_from": source.run_id, "forked_at": at, "waits_after": waits},
        args_blob=source.args_blob, plan=source.plan, incarnation=new[1],
    )  # fmt: skip
    reason = {"forked": source.extra.get("source_reason"), "suspended": source.reason}.get(
        source.status
    )
    if reason is not None:  # a wait it stopped at is still to come (`fork_may_take`)
        manifest.extra["source_reason"] = reason
    note(manifest.extra, copied, level=store.run_level())  # a resume finding fewer refuses
    note_synced(manifest.extra, synced, store.run_level())  # what a power loss may have damaged
    if "rules" in source.extra:  # `rules.KEY`: the fingerprint rules its fingerprints were made under
        manifest.extra["rules"] = source.extra["rules"]
    if source.extra.get("older_code"):  # records of the code before may come along (`listed`)
        manifest.extra["older_code"] = True
    if "steps_total" in source.extra:  # the steps after `at` are still to come
        manifest.extra["steps_total"] = source.extra["steps_total"]
    write_manifest(store, manifest)
