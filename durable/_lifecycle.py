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
from collections.abc import Callable, Mapping
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
    preview_of,
)
from ._identity import Undigestable, run_id_digest, value_digest
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
    *,
    parent: dict[str, Any] | None = None,
    on_change: str | None = None,
) -> Plan[Run[Any]]:
    """`parent` names the run and position that called this one (a child run);
    `on_change` overrides the workflow's own policy."""
    restart = flow.options.restart
    manifest = _runner.existing_run(store, flow.name, run_id, restart=restart)
    # A call's arguments are its own, with the defaults: only resume() starts
    # from the recorded ones (defaults < recorded < overrides). restart=True
    # keeps nothing of the discarded run. Checked complete before anything is
    # deleted. Recorded arguments are decoded only when used: unpickling a
    # class defined in __main__ rebinds the live class's methods.
    inherit = manifest is not None and given is None and not restart
    recorded = _runner.decode_arguments(store, manifest) if inherit and manifest else {}
    bound = _runner.merge_arguments(flow.fn, recorded, given, overrides, restart=restart)
    if restart:
        store.delete_run(flow.name, run_id, keep_lease=True)
        manifest = None
    definition = flow.definition()
    policy = _runner.choose_policy(
        manifest,
        definition,
        on_change=on_change or flow.options.on_change,
        rebase=flow.options.rebase,
    )
    digests = argument_digests(bound)
    if manifest is not None and manifest.status == "completed":
        done = _completed(store, manifest, definition, bound, digests, policy)
        if done is not None:
            return done
    before = copy.deepcopy(manifest)
    manifest = start(store, flow.name, run_id, manifest, definition, bound, digests, parent)
    ctx = _runner.load_context(store, flow.name, run_id, policy)
    ctx.fingerprints = definition.by_spec
    ctx.lease = lease
    try:
        value = yield from _body(flow, bound, ctx)
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


def _body(flow: Flow, bound: inspect.BoundArguments, ctx: RunContext) -> Plan[Any]:
    """Run the workflow body. A refusal raised to the body is final: if the
    body caught it and returned, or raised something else, the refusal is
    what the run ends with (DESIGN §2 "Refusals are final")."""
    try:
        value = yield Call(flow.fn, bound.args, bound.kwargs, lambda: enter_run(ctx))
    except Exception as e:
        if ctx.refusal is not None and e is not ctx.refusal:
            raise ctx.refusal from e
        raise
    ctx.check_refused()
    return value


def _completed(
    store: Store,
    manifest: RunRecord,
    definition: _runner.Definition,
    bound: inspect.BoundArguments,
    digests: dict[str, str],
    policy: str,
) -> Run[Any] | None:
    """A completed run's recorded outcome when this call is the same call,
    else None to run the body (reopened by an artifact, or under "rerun"
    with other arguments). Other arguments under "refuse": refused."""
    if manifest.fingerprint != definition.fingerprint or artifacts_stale(store, manifest):
        return None
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


def argument_digests(bound: inspect.BoundArguments) -> dict[str, str]:
    """One digest per argument (defaults applied), by the one identity rule."""
    return {name: value_digest(value) for name, value in bound.arguments.items()}


def recorded_arguments(store: Store, manifest: RunRecord) -> dict[str, Any]:
    """The run's recorded arguments for a message; {} when unreadable."""
    try:
        return _runner.decode_arguments(store, manifest)
    except Exception:  # a preview must never hide the refusal it explains
        return {}


def changed_arguments(
    manifest: RunRecord,
    digests: Mapping[str, str],
    bound: inspect.BoundArguments,
    recorded_now: Callable[[], Mapping[str, Any]],
) -> dict[str, str]:
    """Arguments of this call that differ from the run's, as "old -> new".
    A run recorded without digests (an older version) differs in every
    argument: its identity cannot be established, so it is not the same call."""
    old = manifest.extra.get("arg_digests")
    if not isinstance(old, dict):
        old = {}
    differ = [n for n in sorted(set(old) | set(digests)) if n not in old or old[n] != digests.get(n)]
    recorded = recorded_now() if differ else {}
    out: dict[str, str] = {}
    for name in differ:
        before = preview_of(recorded[name]) if name in recorded else "(not recorded)"
        if name not in old:
            before += " (recorded without an argument digest)"
        after = preview_of(bound.arguments[name]) if name in bound.arguments else "(none)"
        out[name] = f"{before} -> {after}"
    return out


def derive_run_id(
    workflow: str, chosen: str | Callable[..., str] | None, given: inspect.BoundArguments
) -> str:
    """The explicit id, the id the `run_id=` callable gives, or
    `<workflow>-<12 hex>` over the arguments with defaults applied."""
    if callable(chosen):
        return check_key_part("run id", chosen(*given.args, **given.kwargs))
    if chosen is not None:
        return check_key_part("run id", chosen)
    try:
        digest = run_id_digest(given)
    except Undigestable as e:
        raise ConfigurationError(
            f"cannot derive a run id for {workflow}: {e}. "
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
    digests: dict[str, str],
    parent: dict[str, Any] | None = None,
) -> RunRecord:
    encoding, data = _runner.encode_arguments(bound, allow_pickle=store.allow_pickle)
    if manifest is None:
        manifest = RunRecord(workflow, run_id, "", {}, {}, encoding, b"", created=now())
    manifest.fingerprint = definition.fingerprint
    manifest.steps, manifest.step_parts = definition.steps, definition.parts
    manifest.args_encoding = encoding
    inline, manifest.args_blob = keep_encoded(store, (workflow, run_id), data)
    manifest.args = inline or b""
    manifest.extra["arg_digests"] = digests
    if parent is not None:
        manifest.extra["parent"] = parent
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
