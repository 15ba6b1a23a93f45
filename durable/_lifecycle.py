"""One run's life once its lease is held: the definition check, the
manifest started and finished (completed, failed, suspended, interrupted),
a completed run read back; and the run id a call derives from its
arguments."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from . import _codec, _runner
from ._artifacts import first_stale
from ._context import Run, RunContext, enter_run
from ._engine import Call, Plan, now
from ._errors import (
    ArtifactMissingError,
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    DurableError,
    LeaseLostError,
    NondeterminismError,
    SerializationError,
    StorageError,
    Suspended,
)
from ._records import RunRecord, keep_encoded, load_stored
from ._store import Store, check_key_part


@dataclasses.dataclass(frozen=True)
class Options:
    """A workflow's settings: the decorator's, then `with_options`."""

    run_id: str | Callable[..., str] | None = None
    store: Store | str | None = None
    restart: bool = False
    rebase: bool = False
    on_change: str = "refuse"
    wait: float | None = None
    keep_last: int | None = None


class Flow(Protocol):
    """What the lifecycle needs of a workflow."""

    fn: Callable[..., Any]
    name: str

    options: Options

    def definition(self) -> _runner.Definition: ...


def run_locked(
    flow: Flow,
    store: Store,
    run_id: str,
    given: inspect.BoundArguments | None,
    overrides: dict[str, Any],
    lease: object | None = None,
) -> Plan[Run[Any]]:
    manifest, recorded = _runner.existing_run(
        store, flow.name, run_id, restart=flow.options.restart
    )
    if flow.options.restart:  # fresh records, but a resume keeps its arguments
        store.delete_run(flow.name, run_id, keep_lease=True)
        manifest = None
    definition = flow.definition()
    policy = _runner.choose_policy(
        manifest, definition, on_change=flow.options.on_change, rebase=flow.options.rebase
    )
    if (
        manifest is not None
        and manifest.status == "completed"
        and manifest.fingerprint == definition.fingerprint
        and not artifacts_stale(store, manifest)
    ):
        return recorded_run(store, manifest)
    bound = _runner.merge_arguments(flow.fn, recorded, given, overrides)
    before = copy.deepcopy(manifest)
    manifest = start(store, flow.name, run_id, manifest, definition, bound)
    ctx = _runner.load_context(store, flow.name, run_id, policy)
    ctx.fingerprints = definition.by_spec
    ctx.lease = lease
    try:
        value = yield Call(flow.fn, bound.args, bound.kwargs, lambda: enter_run(ctx))
    except Suspended as s:
        finish(store, manifest, "suspended", reason=s.reason)
        raise
    except (DefinitionChangedError, NondeterminismError, ArtifactMissingError) as e:
        if isinstance(e, ArtifactMissingError) and e.state == "not produced":
            finish(store, manifest, "failed", error=_runner.error_summary(e))
        elif before is not None:  # a refusal changes nothing: arguments and status stay
            _runner.write_manifest(store, before)
        raise
    except Exception as e:
        finish(store, manifest, "failed", error=_runner.error_summary(e))
        raise
    except BaseException as e:
        finish(store, manifest, "interrupted", error=_runner.error_summary(e))
        raise
    manifest.extra["artifacts"] = any(r.artifacts for r in ctx.records.values())
    manifest.extra["operations"] = len(ctx.records)  # history checks none was lost
    complete(store, manifest, value)
    if flow.options.keep_last is not None:
        prune(store, flow.name, flow.options.keep_last)
    return result_run(ctx, manifest, value)


def derive_run_id(
    workflow: str, chosen: str | Callable[..., str] | None, given: inspect.BoundArguments
) -> str:
    """The explicit id, the id the `run_id=` callable gives, or
    `<workflow>-<12 hex>` over the arguments with defaults applied."""
    if callable(chosen):
        return check_key_part("run id", chosen(*given.args, **given.kwargs))
    if chosen is not None:
        return check_key_part("run id", chosen)
    full = inspect.BoundArguments(given.signature, dict(given.arguments))
    full.apply_defaults()
    try:
        digest = _codec.canonical_digest(dict(full.arguments))
    except _codec.NotCanonical as e:
        raise ConfigurationError(
            f"cannot derive a run id for {workflow}: an argument has no canonical form ({e}). "
            f"Pass one explicitly: {workflow}.with_options(run_id='...')(...)"
        ) from None
    return f"{workflow}-{digest[:12]}"


def start(
    store: Store,
    workflow: str,
    run_id: str,
    manifest: RunRecord | None,
    definition: _runner.Definition,
    bound: inspect.BoundArguments,
) -> RunRecord:
    encoding, data = _runner.encode_arguments(bound, allow_pickle=store.allow_pickle)
    if manifest is None:
        manifest = RunRecord(workflow, run_id, "", {}, {}, encoding, b"", created=now())
    manifest.fingerprint = definition.fingerprint
    manifest.steps, manifest.step_parts = definition.steps, definition.parts
    manifest.args_encoding = encoding
    inline, manifest.args_blob = keep_encoded(store, (workflow, run_id), data)
    manifest.args = inline or b""
    manifest.status, manifest.error, manifest.reason = "running", None, None
    _runner.write_manifest(store, manifest)
    return manifest


def finish(
    store: Store,
    manifest: RunRecord,
    status: str,
    *,
    error: dict[str, str] | None = None,
    reason: str | None = None,
) -> None:
    manifest.status, manifest.error, manifest.reason = status, error, reason
    # Called while an error propagates (a step's, or a record write's: disk
    # full, read-only, file too large, lease lost): a manifest write failing
    # for the same cause must not hide that error behind its own.
    pending = sys.exc_info()[1]
    try:
        _runner.write_manifest(store, manifest)
    except (StorageError, LeaseLostError) as e:
        if pending is None:
            raise
        add_note = getattr(pending, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"durable: the run's status ({status}) was not recorded either: {e}")


def complete(store: Store, manifest: RunRecord, value: Any) -> None:
    try:
        manifest.result_encoding, data = _codec.encode_value(
            value, allow_pickle=store.allow_pickle
        )
    except Exception as e:
        err = SerializationError(
            f"{manifest.workflow} (return value)", type(value).__qualname__, str(e)
        )
        finish(store, manifest, "failed", error=_runner.error_summary(err))
        raise err from e
    # Over the blob threshold the value goes to a blob, as a step output does.
    where = (manifest.workflow, manifest.run_id)
    manifest.result, manifest.result_blob = keep_encoded(store, where, data)
    finish(store, manifest, "completed")


def recorded_run(store: Store, manifest: RunRecord) -> Run[Any]:
    """A completed run's outcome, read back without running its body."""
    key = f"{manifest.workflow}/{manifest.run_id}/run"
    if manifest.result_encoding is None:
        raise CorruptRecordError(manifest.run_id, None, key, "completed without a result")
    value = load_stored(
        store, (manifest.workflow, manifest.run_id), manifest.result_encoding,
        manifest.result, manifest.result_blob, position=None, name=key,
    )  # fmt: skip
    return Run(
        manifest.run_id,
        manifest.workflow,
        "completed",
        value,
        None,
        None,
        0,
        0,
        manifest.fingerprint,
    )


def result_run(ctx: RunContext, manifest: RunRecord, value: Any) -> Run[Any]:
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
    )


def artifacts_stale(store: Store, manifest: RunRecord) -> bool:
    # DESIGN §2 Completion: a missing or changed artifact reopens a completed
    # run; the body then replays up to the step that produced it, which
    # step_plan finds stale again and runs.
    if not manifest.extra.get("artifacts"):
        return False
    ctx = _runner.load_context(store, manifest.workflow, manifest.run_id, "refuse")
    records = [ctx.records[p] for p in sorted(ctx.records)]
    return any(r.persisted and first_stale(r.artifacts, store) for r in records)


def prune(store: Store, workflow: str, keep_last: int) -> None:
    from . import _runs

    try:
        _runs.keep_newest(store, workflow, keep_last)
    except DurableError as e:  # the run itself completed; cleanup can wait
        warnings.warn(f"keep_last={keep_last}: old runs not removed: {e}", stacklevel=2)
