"""One run's life, its lease taken (`waiting`): the definition
check, the manifest started and finished (completed, failed, suspended,
interrupted; the writes themselves are `lifecycle`'s), the body run under
the run's state, and a completed run's recorded outcome read back when the
call is the same call."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

from .._fingerprint.madewith import as_run
from .._frozen import Frozen, dataclass
from .._settings import setting
from .._storage.base import Store
from .._storage.manifest import copy_manifest, decode_manifest
from .._storage.noted import DAMAGE, note
from .._storage.records import RunRecord
from ..errors import (
    ArtifactMissingError,
    Cancelled,
    ControlFlow,
    DefinitionChangedError,
    NondeterminismError,
    SerializationError,
    Suspended,
)
from . import cancel, events, lifecycle, notify
from .answerat import note_wait, stopped_at
from .arguments import argument_digests, arguments_digest, inherited, merge_arguments
from .bound import body_of, held_by, run_arguments
from .context import Run, RunState
from .definition import Definition, as_left, choose_policy, left_behind
from .entry import enter_run
from .identity import is_token
from .inputs import answer_text, awaited, usable_inputs, warn_untaken, warn_unused
from .killed import count_killed
from .lifecycle import complete, error_summary, finish, refused, start
from .logs import RESUME_HINT, add_note
from .outcome import completed_outcome, existing_run, records_kept, result_run, without_leftovers
from .ownstate import after_body
from .plan import Call, Plan, raised, warn_if_stopping
from .replay import load_context
from .signature import call_arguments
from .taskfactory import settling
from .threads import install


@dataclass(frozen=True)
class Options(Frozen):
    """A workflow's settings: the decorator's, then `with_options`."""

    run_id: str | Callable[..., str] | None = None
    store: Store | str | os.PathLike[str] | None = None
    restart: bool = False
    rebase: bool = False
    on_change: str | None = None  # None: resolved by `setting` when a run starts
    wait: float | None = None
    keep_last: int | None = None
    progress_file: str | os.PathLike[str] | None = None
    durability: str | None = None  # None: the store's level (`Store.run_level`)


class Flow(Protocol):
    """What the lifecycle needs of a workflow."""

    fn: Callable[..., Any]
    name: str
    options: Options

    def definition(self) -> Definition: ...


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
    inputs: dict[str, Any] | None = None,
    caller: RunState | None = None,
    rebase: bool = False,
    restart: bool = False,
    again: bool = False,
) -> Plan[Run[Any]]:
    """`parent` names the run and position that called this one (a child run);
    `on_change` overrides the workflow's own policy, `rebase` and `restart`
    add to its own; `inputs` answer the run's `wait_for()` calls; a child
    run is offered its `caller`'s."""
    restart = restart or flow.options.restart
    manifest, raw = existing_run(store, flow.name, run_id, restart=restart)
    if parent is not None and manifest is not None and made_before(manifest, parent):
        restart = True  # the parent run that made it was discarded since
    if manifest is not None and not restart and manifest.status == "cancelled":
        refuse_cancelled(store, manifest)  # first: a refusal of its code or arguments advised a resume
    # A call's arguments are its own, with the defaults: only resume() starts
    # from the recorded ones (defaults < recorded < overrides). restart=True
    # keeps nothing of the discarded run. Checked complete before anything is
    # deleted. Recorded arguments are decoded only when used: unpickling a
    # class defined in __main__ rebinds the live class's methods.
    inherit = manifest is not None and given is None and not restart
    recorded, kept = inherited(store, manifest) if inherit and manifest else ({}, None)
    bound = merge_arguments(flow.fn, recorded, given, overrides, restart=restart, digests=kept)
    if restart:
        store.delete_run(flow.name, run_id, keep_lease=True)
        manifest = None
    definition = as_left(flow.fn, as_run((flow.name, run_id), flow.definition), manifest)
    on_change = setting("on_change", on_change or flow.options.on_change)
    rebase = flow.options.rebase or rebase
    policy = lifecycle.checked_at_start(
        store, manifest, raw, lambda: choose_policy(manifest, definition, on_change=on_change, rebase=rebase)
    )
    digests = argument_digests(bound)
    if caller is not None:
        inputs = caller.inputs
    if manifest is not None and manifest.status == "completed":
        # An answer that differs from the recorded one is refused here too
        # (a child offered its caller's inputs has no wait left to answer).
        if inputs and caller is None:
            usable_inputs(load_context(store, flow.name, run_id, policy), inputs)
        # A child that changed an argument its caller gave it runs its body again (its steps
        # replay): returning its result would not redo that. So do one reading its caller's
        # arguments through its closure and (`again`) one whose steps write what another reads.
        redo = caller is not None and (
            again or manifest.extra.get("in_place") or held_by(flow.fn, caller.argument_values, caller.bodies)
        )
        done = None if redo else completed_outcome(store, manifest, definition, bound, digests, policy)
        if done is not None:
            events.emit(events.recorded_completion(run_id, flow.name))
            return done
    if parent is None:  # a child's parent stops first
        warn_if_stopping()
    if manifest is not None:  # the run goes on: its manifest is written back, plan and all
        manifest.plan = decode_manifest(store, flow.name, run_id, raw).plan
    ctx = load_context(store, flow.name, run_id, policy)
    # A child without a level of its own takes the one its caller was given, or its store's
    # where that syncs more (`Store.run_level`): "fsync" asked for a call covers every step it runs.
    asked = flow.options.durability if flow.options.durability or caller is None else caller.durability
    level = store.run_level(flow.options.durability, None if caller is None else caller.durability)
    ctx = without_leftovers(ctx) if manifest is None else records_kept(ctx, manifest, level)
    ctx.arguments, ctx.durability = arguments_digest(digests), asked
    ctx.argument_values = run_arguments(bound.arguments.values())
    ctx.bodies = body_of(flow.fn, digests)
    if caller is not None:  # a workflow defined in its caller's body reads the caller's too
        ctx.argument_values += caller.argument_values
        ctx.bodies += caller.bodies
    if manifest is not None and not restart:  # after the read: its listing shows a marker
        refuse_cancelled(store, manifest)
    cancel.watch(ctx)
    # Before the run is touched (a refusal changes nothing): the last attempt's end tells the input awaited.
    ended = (manifest.status, manifest.reason) if manifest is not None else (None, None)
    fork = manifest.extra if manifest is not None and manifest.status == "forked" else None
    if caller is not None:
        ctx.callers_inputs = [*caller.callers_inputs, caller.inputs]
        ctx.awaited, ctx.caller = caller.awaited, caller
        ctx.unkept = caller.unkept  # the root run's, one dict: `unkept.holds` asks it alone
    made = (definition.fingerprint, ctx.arguments)  # what the wait a run stops at is noted with
    waits = stopped_at(manifest.extra, made) if manifest is not None else None
    ctx.inputs = usable_inputs(ctx, inputs or {}, status=ended[0], reason=ended[1], fork=fork, waits=waits)
    ctx.awaited |= awaited(ctx.inputs, ended[0], ended[1], fork)
    # Copied before the death is counted: a refusal puts back the run as found, and the next
    # attempt counts that death itself (counted here too, one refusal made it two).
    before = copy_manifest(manifest)
    ctx.killed = count_killed(manifest, ctx, definition.fingerprint, lease)  # `start` writes it down
    started = time.time()
    try:  # `start` opens the run's records (`finish` ends it)
        manifest = start(store, flow.name, run_id, manifest, definition, bound, digests, parent, level)
    except BaseException:
        store.end_run(flow.name, run_id)
        raise
    ctx.attempt = manifest.extra.get("attempt")  # `noted.carry`
    ctx.fingerprints = definition.by_spec
    ctx.lease, ctx.created = lease, manifest.created
    fp = definition.fingerprint
    notify.begin(ctx, before, policy=policy, fingerprint=fp, started=started, parent=parent)
    try:
        stopped: BaseException | None = None  # not sys.exc_info(): a caller's error shows there
        try:
            value = yield from _body(flow, bound, ctx)
        except BaseException as e:  # however it stops short
            stopped = e
            lifecycle.made_nothing(manifest, ctx)
            raise
        finally:  # what a resume (`records_kept`) and history must find again
            note(manifest.extra, ctx.records, stopped, level)
            left_behind(flow.fn, definition, flow.definition)  # `as_left`
    except Cancelled as e:
        if (e.workflow, e.run_id) != (flow.name, run_id) and not cancel.of_a_caller(ctx, e):
            # A child run was cancelled, not this one: this run stays resumable
            # (it runs the child afresh once the child is removed).
            finish(store, manifest, "failed", error=error_summary(e, ctx), pending=e)
            notify.run_failed(ctx, e)
            raise
        finish(store, manifest, "cancelled", reason="cancelled", pending=e)
        notify.ended(ctx, events.RunCancelled(run_id, flow.name))
        raise
    except Suspended as s:
        warn_unused(ctx, s)  # once: the runs it passes through on its way up say nothing
        note_wait(manifest.extra, s, made)  # before `_name_caller` names this run in it
        finish(store, manifest, "suspended", reason=s.reason, pending=s)
        notify.ended(ctx, events.RunSuspended(run_id, flow.name, reason=s.reason))
        _name_caller(s, ctx)
        if s.run_id == run_id:  # answered by resuming this run: say how
            s.workflow, s.args = flow.name, (answer_text(s, flow.name, flow.fn, store.url, bound),)
        raise
    except (DefinitionChangedError, NondeterminismError, ArtifactMissingError, *DAMAGE) as e:
        # A damaged record is a refusal when replay reached it (`lookup`).
        damage = isinstance(e, DAMAGE) and e is not ctx.refusal
        if damage or (isinstance(e, ArtifactMissingError) and e.state == "not produced"):
            finish(store, manifest, "failed", error=error_summary(e, ctx), pending=e)
        else:
            refused(store, before, manifest, e, ctx, level)
        notify.run_failed(ctx, e)
        raise
    except Exception as e:
        finish(store, manifest, "failed", error=error_summary(raised(e), ctx), pending=e)
        notify.run_failed(ctx, raised(e))
        _untaken(ctx, "failed", caller, bound)
        raise
    except BaseException as e:
        finish(store, manifest, "interrupted", error=error_summary(e, ctx), pending=e)
        add_note(e, f"durable: run {run_id!r} was interrupted; {RESUME_HINT}")
        notify.run_interrupted(ctx, e)
        raise
    manifest.extra.pop("in_place", None)
    if caller is not None and not is_token(ctx.arguments) and _changed(bound, digests):
        manifest.extra["in_place"] = True  # see `redo` above
    manifest.extra["artifacts"] = ctx.records.list_artifacts()
    # Steps the definition's fingerprint does not cover: a re-call replays
    # the body so that each is fingerprinted afresh (`completed_outcome`).
    unreached = sorted({spec.name for spec, _ in ctx.unreached.values()})
    if unreached or "unreached" in manifest.extra:
        manifest.extra["unreached"] = unreached
    manifest.plan = plan_of(ctx)  # later attempts show what is still to come
    manifest.extra["steps_total"] = len(manifest.plan)
    try:
        complete(store, manifest, value, ctx)
    except SerializationError as e:
        notify.run_failed(ctx, e)
        raise
    end = events.RunCompleted(run_id, flow.name, replayed=ctx.replayed, executed=ctx.executed)
    notify.ended(ctx, end)
    _untaken(ctx, "completed", caller, bound)
    return result_run(ctx, manifest, value)


def _untaken(ctx: RunState, ended: str, caller: RunState | None, bound: inspect.BoundArguments) -> None:
    """Inputs no wait took, said once, by the run given them (a child's: its callers')."""
    if caller is None:
        warn_untaken(ctx, ended, "inputs" in bound.signature.parameters)


def _changed(bound: inspect.BoundArguments, digests: dict[str, str] | None) -> bool:
    """Whether the body changed the arguments it was given (`redo`)."""
    with after_body():
        return argument_digests(bound) != digests


def plan_of(ctx: RunState) -> list[Any]:
    """[kind, name] per top-level position (None for one whose operations
    all ran inside asyncio tasks: it has no record of its own)."""
    done = ctx.records.decoded_all()  # most runs: each read without a Python call
    get = ctx.records.get if done is None else done.get
    return [[rec.kind, rec.name] if (rec := get(p)) is not None else None for p in range(ctx.positions)]


def _body(flow: Flow, bound: inspect.BoundArguments, ctx: RunState) -> Plan[Any]:
    """Run the workflow body. A refusal raised to the body is final: if the
    body caught it and returned, or raised something else, the refusal is
    what the run ends with (DESIGN §2 "Refusals are final")."""
    fn = settling(flow.fn, ctx) if inspect.iscoroutinefunction(flow.fn) else flow.fn
    install()  # threads it starts carry its context (`threads`)
    try:
        value = yield Call(fn, *call_arguments(bound), lambda: enter_run(ctx))
    except Exception as e:
        final = ctx.refusal or ctx.child_stop
        if final is not None and e is not final:
            raise final from e
        if isinstance(e, Suspended) or (final is None and not isinstance(e, ControlFlow)):
            cancel.outranks(ctx, e)  # a failure or a pause: the run's end looks too
        raise
    final = ctx.refusal or ctx.child_stop
    if final is not None:  # caught by the body, which returned anyway
        raise final
    cancel.poll_at_end(ctx)  # the end is a boundary too: a cancel there now ends it cancelled
    return value


def _name_caller(s: Suspended, ctx: RunState) -> None:
    """A child run's suspension, on its way up, names each run that called it, last
    the one its caller started: resuming the child's id, as the message said, was
    refused. Changed in place: its traceback stays. A run of its own (a workflow
    called in a `loop_over` item) is resumed by its own id: its suspension keeps it."""
    if s is ctx.child_stop and s.run_id != ctx.run_id:
        named = Suspended(ctx.run_id, s.reason, waiting_for=s.waiting_for, child=s.child or s.run_id)
        s.run_id, s.child, s.args = ctx.run_id, named.child, named.args


def refuse_cancelled(store: Store, manifest: RunRecord) -> None:
    """A cancelled run, or one whose cancel its holder never saw (it died
    first), ends `cancelled` here: only a restart runs it again."""
    workflow, run_id = manifest.workflow, manifest.run_id
    if manifest.status != "cancelled" and not cancel.is_cancelled(store, workflow, run_id):
        return
    if manifest.status == "completed":
        cancel.withdraw_late(store, workflow, run_id)
        return
    if manifest.status != "cancelled":
        finish(store, manifest, "cancelled", reason="cancelled")
    raise Cancelled(workflow, run_id)


def made_before(manifest: RunRecord, parent: dict[str, Any]) -> bool:
    """Whether a child run was made by an earlier run of the same parent run id
    (restarted, or removed and run again since): its records are then the discarded
    run's, and a restart keeps nothing of those. A link written before links carried
    `created` cannot tell, and counts as made by this parent run."""
    old = manifest.extra.get("parent")
    if not isinstance(old, dict) or "created" not in old:
        return False
    same_run = (old.get("workflow"), old.get("run_id")) == (parent["workflow"], parent["run_id"])
    return same_run and old["created"] != parent["created"]
