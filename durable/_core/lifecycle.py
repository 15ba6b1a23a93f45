"""The manifest writes of a run's life: started (or resumed, noted for the
timeline), finished with a status, or completed with its return value. The
lifecycle in `run` decides which; these say what each writes."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._errortext import plain_data
from .._storage import codec
from .._storage.base import Store
from .._storage.clock import now
from .._storage.keys import new_incarnation
from .._storage.manifest import decode_manifest, write_manifest
from .._storage.noted import note, note_opened, note_synced
from .._storage.records import RunRecord, keep_encoded
from ..errors import DefinitionChangedError, LeaseLostError, SerializationError, StorageError
from . import unkept
from .arguments import at_default, encode_arguments
from .attempts import failure_text
from .context import RunState
from .definition import UNMADE, Definition
from .killed import KEY as KILLED
from .rules import KEY as RULES
from .rules import rules


def start(
    store: Store,
    workflow: str,
    run_id: str,
    manifest: RunRecord | None,
    definition: Definition,
    bound: inspect.BoundArguments,
    digests: dict[str, str],
    parent: dict[str, Any] | None = None,
    level: str | None = None,
) -> RunRecord:
    """The manifest of an attempt starting, written: a resumed run's has
    noted the records found (`outcome.records_kept`), a new run's notes
    none, under durability `level`. The run's records are opened first:
    what they hold is made durable before it is noted."""
    size = store.open_run(workflow, run_id, level)  # `finish` ends it
    encoding, data = encode_arguments(bound, allow_pickle=store.allow_pickle)
    if manifest is None:
        token = new_incarnation() if store.incarnations else ""  # a new run: a new folder
        store.note_incarnation(workflow, run_id, token)  # its arguments' blob goes there too
        manifest = RunRecord(workflow, run_id, "", {}, {}, encoding, b"", created=now(),
                             incarnation=token)  # fmt: skip
        note(manifest.extra, (), level=level)
    else:
        note_resume(manifest)
        manifest.extra.pop(REFUSED, None)  # this attempt runs: what it ends with is said
        if not manifest.extra.pop(UNMADE, False) and _other_code(manifest.steps or {}, definition.steps):
            # Records of the code before may stay where this attempt does not
            # reach: a listing counts this run's finished steps from its
            # records then, as `durable show` does (`listed`).
            manifest.extra["older_code"] = True
    note_opened(manifest.extra, size, level)
    manifest.fingerprint = definition.fingerprint
    manifest.extra[RULES] = rules()  # what made it: a refusal under other rules says so
    manifest.steps, manifest.step_parts = definition.steps, definition.parts
    manifest.args_encoding = encoding
    inline, manifest.args_blob = keep_encoded(store, (workflow, run_id), data)
    manifest.args = inline or b""
    manifest.extra["arg_digests"] = digests
    defaulted = at_default(bound)  # what a resume may fill with the default again
    if defaulted:
        manifest.extra["defaulted"] = defaulted
    else:
        manifest.extra.pop("defaulted", None)
    if definition.bound is not None:  # what its method steps' objects were at the start
        manifest.extra["bound"] = definition.bound
    else:
        manifest.extra.pop("bound", None)
    if parent is not None:
        manifest.extra["parent"] = parent
    manifest.status, manifest.error, manifest.reason = "running", None, None
    # One of the two writes of an attempt (`finish` is the other), kept: a
    # process killed (`kill -9`, the OOM killer) between them leaves only
    # this one, and the next attempt needs what it holds. `running`: the run
    # lists as interrupted and `recover()` resumes it (a suspended one it
    # passes over), and a death is counted (`killed.count_killed`, whose
    # count this write carries: without it a step killing its process ran
    # again at every resume); the records noted and the log's synced size
    # (`outcome.records_kept` tells a lost record from one never written);
    # the arguments this attempt's records were made with (overridden on a
    # resume); a new run's incarnation folder, which its records are in.
    write_manifest(store, manifest)
    return manifest


def _other_code(before: dict[str, str], now: dict[str, str]) -> bool:
    """Whether a step the last attempt fingerprinted runs other code now."""
    return any(before.get(name, fp) != fp for name, fp in now.items())


# A run's last resume refused before anything ran, its code changed since
# (`checked_at_start`): [definition recorded, definition refused, changed steps].
REFUSED = "refused"


def checked_at_start(store: Store, manifest: RunRecord | None, raw: bytes, check: Callable[[], str]) -> str:
    """`check()`, the definition check (`choose_policy`), for a run found
    half way: one refused stays as found (status, records, deaths: the
    next attempt counts a killed holder's death itself), and so does what
    code put back does with it; its manifest notes the refusal, or `durable
    show` and `runs` would offer a plain resume, refused again while the
    code stays changed, and not the refusal's ways out."""
    try:
        return check()
    except DefinitionChangedError as e:
        if manifest is not None and manifest.status != "completed" and e.position is None:
            manifest.plan = decode_manifest(store, manifest.workflow, manifest.run_id, raw).plan  # kept whole
            manifest.extra[REFUSED] = [e.old_fingerprint, e.new_fingerprint, sorted(e.changed_steps)]
            write_manifest(store, manifest)
        raise


# How many resumptions a manifest remembers for the timeline (the newest).
RESUMES_KEPT = 20


def note_resume(manifest: RunRecord) -> None:
    """Where the timeline shows a break: when this attempt began and how the
    one before ended (a holder killed mid-run left `running` behind)."""
    before = "interrupted" if manifest.status == "running" else manifest.status
    notes = [*manifest.extra.get("resumes", []), [now(), before]]
    manifest.extra["resumes"] = notes[-RESUMES_KEPT:]


def finish(
    store: Store,
    manifest: RunRecord,
    status: str,
    *,
    error: dict[str, str] | None = None,
    reason: str | None = None,
    pending: BaseException | None = None,
) -> None:
    """`pending`: the error the run stops with, if any (a step's, or a record
    write's: disk full, read-only, lease lost): a manifest write failing for
    the same cause must not hide it behind its own. Passed, not read from
    `sys.exc_info()`: a workflow called inside a caller's `except` block sees
    the caller's error there, and a completed run's failed status write was
    then put on that error as a note and lost."""
    manifest.status, manifest.error, manifest.reason = status, error, reason
    try:
        # What the run wrote is durable before its status says where it ended.
        note_synced(manifest.extra, store.end_run(manifest.workflow, manifest.run_id))
        write_manifest(store, manifest)
    except (StorageError, LeaseLostError) as e:
        if pending is None:
            raise
        add_note = getattr(pending, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"durable: the run's status ({status}) was not recorded either: {e}")


def refused(
    store: Store, before: RunRecord | None, manifest: RunRecord, error: BaseException, ctx: RunState, level: str
) -> None:
    """A refused attempt's end: the run as it found it (arguments, status: a
    suspended run still awaits its answer), its records noted. A run found
    `running` (its holder died) or made by this attempt has no end of its
    own to go back to: left `running`, the next attempt took over from a
    holder that had ended (refused) and counted a death nobody died. It
    ends `failed` with the refusal, the deaths this attempt counted kept
    (`killed.count_killed` keeps them past a refusal). If no attempt
    recorded anything, the code refused made none of it (`UNMADE`, as
    `made_nothing` flags a run that stopped so); one that
    did keeps the definition that made its records, found by `start`."""
    if before is None or before.extra.get(UNMADE):
        made_nothing(manifest, ctx)
        finish(store, manifest, "failed", error=error_summary(error, ctx), pending=error)
        return
    synced = store.end_run(manifest.workflow, manifest.run_id)
    before.extra.pop(REFUSED, None)  # its code ran (or no longer refuses it): this refusal is its own
    note(before.extra, ctx.records, error, level)  # a rerun may have dropped some
    note_synced(before.extra, synced)
    if before.status == "running":
        before.status, before.error = "failed", error_summary(error, ctx)
        if KILLED in manifest.extra:
            before.extra[KILLED] = manifest.extra[KILLED]
    write_manifest(store, before)


def made_nothing(manifest: RunRecord, ctx: RunState) -> None:
    """A run that stops short (failed, interrupted, refused, suspended at
    its first `wait_for`, cancelled) holding no record, no loop item (read
    at its start, or kept by this attempt) and no timer has nothing other
    code could replay stale: flagged `UNMADE`, the fixed or edited code
    runs it rather than being refused (`start` clears the flag: an attempt
    that records keeps its definition). Never a completed run: its return
    value is what its code made. The one rule of every end: a refusal
    counted records alone, and the items a failed attempt kept were
    counted by neither, so edited code ran them again unrefused."""
    if not (len(ctx.records) or ctx.items or ctx.kept_items or ctx.timers):
        manifest.extra[UNMADE] = True


def complete(store: Store, manifest: RunRecord, value: Any, ctx: RunState) -> None:
    unkept_value = unkept.holds(ctx, value)
    try:
        if unkept_value:  # a completed run's re-call has no other answer to give
            raise TypeError("it holds what a persist=False step returned, which is never written")
        manifest.result_encoding, data = codec.encode_value(
            value, allow_pickle=store.allow_pickle
        )
    except Exception as e:
        wanted = (
            "Return what the caller needs without that step's value (a completed run hands back its "
            "stored result, and that value is never stored), or make the step persist=True"
            if unkept_value else f"{plain_data(store.allow_pickle)} from the workflow"
        )  # fmt: skip
        err = SerializationError(
            f"{manifest.workflow} (return value)", type(value).__qualname__, str(e),
            advice=f"{wanted}. The steps' records are intact: fix it and call again, the finished steps replay.",
        )  # fmt: skip
        finish(store, manifest, "failed", error=error_summary(err, ctx), pending=e)
        raise err from e
    # Over the blob threshold the value goes to a blob, as a step output does.
    where = (manifest.workflow, manifest.run_id)
    manifest.result, manifest.result_blob = keep_encoded(store, where, data)
    finish(store, manifest, "completed")


def error_summary(exc: BaseException, ctx: RunState | None = None) -> dict[str, str]:
    """A failed run's error as its manifest keeps it (`attempts.failure_text`)."""
    message, tb = failure_text(exc, ctx)
    return {"type": type(exc).__qualname__, "message": message, "traceback": tb}
