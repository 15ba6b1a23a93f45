"""A run's outcome: the `Run` a call gets back, built from the live run or
read back from a completed run's manifest (read by `existing_run`), and
whether a completed run answers this call (same definition, same
arguments, artifacts intact)."""

from __future__ import annotations

import inspect
import math
from typing import Any

from .._errortext import shell_words, warn
from .._frozen import made
from .._storage.base import Store
from .._storage.keys import manifest_key, position_key
from .._storage.manifest import decode_manifest
from .._storage.noted import lost, note, short
from .._storage.records import RunRecord, load_stored
from ..errors import CorruptRecordError, DefinitionChangedError, IntegrityError
from .arguments import changed_arguments, recorded_arguments
from .context import Run, RunState
from .definition import Definition
from .recorded import Recorded
from .replay import load_context


def existing_run(
    store: Store, workflow: str, run_id: str, *, restart: bool
) -> tuple[RunRecord | None, bytes]:
    """The run's manifest and its bytes. Its plan (one entry per position)
    is checked but not expanded: a completed run's re-call needs none, and
    a run that goes on decodes it from the bytes. With `restart` (the way
    out a damaged or unverifiable manifest's error names), one that cannot
    be read or decoded counts as absent: restarting discards it anyway."""
    raw = store.load_manifest(workflow, run_id)
    if raw is None:
        return None, b""
    try:
        return decode_manifest(store, workflow, run_id, raw, plan=False), raw
    except (CorruptRecordError, IntegrityError):
        if not restart:
            raise
        return None, b""


def without_leftovers(ctx: RunState) -> RunState:
    """The context of a run that has no manifest, its lease held: records
    found there are no call of this run, but what a fork (which writes its
    manifest last) or a removal killed half way left. Replayed, they would
    hand out values no step of this run returned (a fork's `mutate`'s), so
    they are removed, with a warning. So is a cancel marker: it is a removed
    run's (the removal deletes it after the manifest), and would end this
    new run `cancelled` at its first look."""
    found = len(ctx.records) + len(ctx.items) + len(ctx.timers) + len(ctx.failures)
    marked = ctx.store.cancel_marked(ctx.workflow, ctx.run_id, fresh_within=math.inf)
    if not found and not marked:
        return ctx
    what = f"{found} record(s)" + (" and a cancel marker" if marked else "")
    warn(
        f"run {ctx.run_id!r} of {ctx.workflow!r} has no manifest, yet {what} were "
        "left over there (a fork or a removal that did not finish): they were removed, not "
        "replayed, and the run starts afresh"
    )
    ctx.store.delete_run(ctx.workflow, ctx.run_id, keep_lease=True)
    return load_context(ctx.store, ctx.workflow, ctx.run_id, ctx.policy)


def records_kept(ctx: RunState, manifest: RunRecord, level: str) -> RunState:
    """The context of a run going on, when its records are still there: a
    run whose manifest notes more records than the store now holds (`noted`)
    lost some since (a removal's deletion that landed after the run was
    started afresh under its id, a lost object, a truncated log or segment,
    an expiry rule, by hand). Resumed, it would run them again: refused,
    nothing runs. Else the records found are noted for this attempt, run
    under durability `level`."""
    missing = lost(manifest.extra, ctx.records)
    killed = None
    if manifest.status == "running" and isinstance(ctx.records, Recorded):  # killed: not noted
        killed = short(manifest.extra, ctx.records.marks())
    if missing is None and killed is None:
        note(manifest.extra, ctx.records, level=level)  # written by `start`
        return ctx
    if missing is not None:
        expected, gone = missing
        found = len(ctx.records)
        where = "none of their records is in the store"
        if found:
            at = f" (none at position {', '.join(map(str, gone[:10]))})" if gone else ""
            where = f"only {found} of their records are in the store{at}"
        said = f"it noted {expected} finished operations when its last attempt {_ended(manifest)}"
    else:
        assert killed is not None
        (made, found), gone = killed, []
        said = f"its last attempt, which did not end, made at least {made} records (as they tell)"
        where = f"only {found} of them are in the store"
    why = (
        f"{said}, and {where}: {'the others were' if found else 'they were'} deleted or lost "
        "since, and a resume would run them again"
    )
    first = gone[0] if gone else 0
    fork = shell_words("fork", ctx.run_id, "--workflow", ctx.workflow, "--at", first)
    advice = (
        f"Run it again from position {first} in a copy of the run (`durable {fork}`, "
        "then resume the copy), or start it afresh with restart=True (durable run --restart)"
    )
    key = manifest_key(ctx.workflow, ctx.run_id)[:-4]
    raise CorruptRecordError(ctx.run_id, None, key, why, advice=advice)


def _ended(manifest: RunRecord) -> str:
    return "started (it did not end)" if manifest.status == "running" else f"ended ({manifest.status})"


def completed_outcome(
    store: Store,
    manifest: RunRecord,
    definition: Definition,
    bound: inspect.BoundArguments,
    digests: dict[str, str],
    policy: str,
) -> Run[Any] | None:
    """A completed run's recorded outcome when this call is the same call,
    else None to run the body (reopened by an artifact, or under "rerun"
    with other arguments). Other arguments under "refuse": refused."""
    if manifest.fingerprint != definition.fingerprint or artifacts_stale(store, manifest):
        return None
    if manifest.extra.get("unreached"):  # steps no definition covers: checked as they replay
        return None
    if definition.bound is not None and manifest.extra.get("bound") != definition.bound:
        return None  # `model.k = 5` since: its method step's calls are compared as they replay
    differ = changed_arguments(
        manifest, digests, bound, lambda: recorded_arguments(store, manifest)
    )
    if not differ:
        return recorded_run(store, manifest)
    if policy == "refuse":
        raise DefinitionChangedError(
            manifest.workflow,
            manifest.run_id,
            manifest.fingerprint,
            definition.fingerprint,
            {},
            arguments=differ,
        )
    return None


def recorded_run(store: Store, manifest: RunRecord) -> Run[Any]:
    """A completed run's outcome, read back without running its body."""
    key = manifest_key(manifest.workflow, manifest.run_id)
    if manifest.result_encoding is None:
        raise CorruptRecordError(manifest.run_id, None, key, "completed without a result")
    value = load_stored(
        store, (manifest.workflow, manifest.run_id), manifest.result_encoding,
        manifest.result, manifest.result_blob, position=None, name=key,
    )  # fmt: skip
    return made(  # `Run(...)` without a Python `__setattr__` call a field
        Run,
        manifest.run_id,
        manifest.workflow,
        "completed",
        value,
        None,
        None,
        0,
        0,
        manifest.fingerprint,
        manifest.steps_total(),
    )


def result_run(ctx: RunState, manifest: RunRecord, value: Any) -> Run[Any]:
    resumed = ctx.first_live if ctx.replayed else None
    if ctx.replayed and resumed is None:
        resumed = ctx.position
    return Run(
        ctx.run_id,
        manifest.workflow,
        "completed",
        value,
        None,
        resumed,
        ctx.replayed,
        ctx.executed,
        manifest.fingerprint,
        ctx.positions,
    )


def artifacts_stale(store: Store, manifest: RunRecord) -> bool:
    # DESIGN §2 Completion: a missing or changed artifact reopens a completed
    # run; the body then replays up to the step that produced it, which
    # step_plan finds stale again and runs. A child run's artifacts count for
    # the parent too: the parent replays the child's value without running it.
    if not manifest.extra.get("artifacts"):
        return False
    ctx = load_context(store, manifest.workflow, manifest.run_id, "refuse")
    records = [ctx.records[p] for p in sorted(ctx.records, key=position_key)]  # 2 < 2.0.0 < 3
    persisted = [r for r in records if r.persisted]
    from .._storage.files import first_stale  # a run with artifacts only: its module loaded then

    return first_stale(left_by_the_run(persisted), store) is not None or any(
        child_stale(store, r.extra["child"]) for r in records if "child" in r.extra
    )


def left_by_the_run(records: list[Any]) -> list[dict[str, Any]]:
    """Each artifact URL once, as the last record (in position order) that
    registered it describes it: a file each step rewrites is as the run left
    it when it is as the last of them left it, though the first described
    it otherwise. Only for a completed run called again, which then runs
    nothing: a resume checks each record's own, since a step executed again
    in between would read what a later one left there."""
    last: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, rec in enumerate(records):
        for entry in rec.artifacts or ():
            last.pop(entry["url"], None)  # in the order they were left
            last[entry["url"]] = (n, entry)
    found = list(last.values())
    if not any(e.get("kind") == "folder" for _, e in found):
        return [e for _, e in found]
    from .._storage.files import paired

    # A folder, with what later records registered in it (`files.paired`).
    return [paired(e, (f["url"] for m, f in found[k + 1 :] if m > n)) for k, (n, e) in enumerate(found)]


def child_files(store: Store, workflow: str, run_id: str) -> list[dict[str, Any]] | None:
    """The files a child run that just completed left, its children's
    included, as `artifacts_stale` checks them: kept in its parent's record
    (`child_stale`), so that a record copied into a fork is checked still
    once the source's child run is gone. None when a child of its own
    named no list (recorded before lists were kept)."""
    ctx = load_context(store, workflow, run_id, "refuse")
    records = [ctx.records[p] for p in sorted(ctx.records, key=position_key)]  # 2 < 2.0.0 < 3
    files = left_by_the_run([r for r in records if r.persisted])
    for link in (r.extra.get("child") for r in records if "child" in r.extra):
        if not isinstance(link, dict) or not link.get("artifacts"):
            continue
        if not isinstance(link.get("files"), list):
            return None
        files += link["files"]
    return files


def child_stale(store: Store, child: dict[str, Any]) -> bool:
    """Whether the child run a parent's record names has an artifact missing
    or changed: the files the record keeps (`child_files`), else those of
    the child's manifest; a child whose manifest is not in this store
    (gone, or kept in a store of its own) counts as stale when it had
    artifacts: the parent then runs it, and it checks itself."""
    if not child.get("artifacts"):
        return False
    if isinstance(child.get("files"), list):
        from .._storage.files import first_stale

        return first_stale(child["files"], store) is not None
    try:
        raw = store.load_manifest(child["workflow"], child["run_id"])
        if raw is None:
            return True
        manifest = decode_manifest(store, child["workflow"], child["run_id"], raw, plan=False)
    except (CorruptRecordError, IntegrityError, KeyError, TypeError):
        return True
    return artifacts_stale(store, manifest)
