"""A workflow called inside a workflow: a child run of its own.

The child has its own run id (given, or derived from the parent's run id and
position), records, lease and manifest (which names its parent); the parent
records the child's result at one position, like a step's output, so that a
replayed parent never enters the child again."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Protocol

from .._core import notify
from .._core.arguments import derive_run_id
from .._core.attempts import keep_failure
from .._core.bound import with_held
from .._core.changed import in_place_warning
from .._core.context import Run, RunState
from .._core.identity import call_digest, changed_in_place
from .._core.inputs import usable_inputs
from .._core.killed import CHILD
from .._core.loadback import load_value
from .._core.named import given_digest, note_given
from .._core.outcome import child_files, child_stale
from .._core.plan import Plan
from .._core.replay import commit, load_context, lookup, reopen
from .._core.run import Flow, run_locked
from .._core.stillheld import still_held
from .._core.waiting import holding
from .._core.written import with_written
from .._errortext import warn
from .._storage.base import Store
from .._storage.clock import now
from .._storage.factory import store_at
from .._storage.fence import Held
from .._storage.keycheck import MAX_KEY_PART, check_key_part
from .._storage.keys import Position, as_position, format_position
from .._storage.manifest import decode_manifest
from .._storage.records import StepRecord
from ..errors import (
    Cancelled,
    ConfigurationError,
    ControlFlow,
    CorruptRecordError,
    DefinitionChangedError,
    IntegrityError,
    LeaseLostError,
    NondeterminismError,
    StorageError,
    Suspended,
)
from .retention import prune

# What a child run refuses is refused to its parent too (DESIGN §2,
# "Refusals are final"): a parent body that catches it must not go on and
# complete with a fallback value. So is a record the child cannot read
# (damaged, forged, or a value that cannot be loaded back).
_FINAL = (
    DefinitionChangedError, NondeterminismError, LeaseLostError, CorruptRecordError,
    IntegrityError,
)  # fmt: skip
# A child's suspension or cancel ends its parent too, however the body
# handles it (both are `Exception`s, through DurableError: a parent that
# caught one completed, for good, the child's question unanswered). Checked
# as the body ends (`run._body`), not at the next operation: the children
# a gather started with it go on to their own questions, which one resume
# then answers together.
_ENDS_PARENT = (Suspended, Cancelled)


class ChildFlow(Flow, Protocol):
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments: ...
    def _store(self) -> Store: ...


def child_plan(
    flow: ChildFlow, parent: RunState, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Plan[Run[Any]]:
    pos = parent.take_position(CHILD)
    given = flow._bind(args, kwargs)
    # A workflow defined in the parent's body, or made there by a factory
    # (`child = make_child(sorted(xs))`: `decorate`), may read the parent's arguments.
    definition = flow.definition()
    label = flow.name
    held = with_held(flow.fn, call_digest(given.signature, args, kwargs, label), parent.argument_values, parent.bodies)
    # `agent("tools", q)`, a step of the child importing what it is given (`named`).
    digest = given_digest(definition.writers, held, args, kwargs, label, definition.fingerprint)
    if digest != held:
        note_given(parent, flow.fn, label, definition.fingerprint)  # checked at a re-call
    # What its steps write that another step reads, as they left it (`written.with_written`).
    written = functools.partial(_with_writes, definition.writers, digest, label, definition.fingerprint)
    # A record forgotten for what the child's steps wrote (a rerun): their
    # writes are redone only by running it afresh (its own run is complete).
    redo = pos in parent.records and written() != digest
    rec = lookup(parent, pos, label, definition.fingerprint, written(), call=(args, kwargs))
    run_id = child_run_id(flow, parent, pos, given)
    store = parent.store if flow.options.store is None else flow._store()
    if rec is not None and rec.persisted and child_stale(store, rec.extra.get("child", {})):
        reopen(parent, pos)  # a file the child made is gone or changed: the child runs
        rec = None
    if rec is not None and rec.persisted:
        value = load_value(parent, rec)
        if parent.inputs:
            _offer_replayed(store, rec.extra.get("child", {}), parent)
        notify.replayed(parent, rec)
        return Run(run_id, flow.name, "completed", value, None, None, 0, 0, rec.fingerprint)
    started = now()
    # A parent re-running what changed re-runs what changed in its children
    # too; a rebased parent (its definition covers its children's code)
    # replays their records as its own.
    own = flow.options.on_change
    policy = "rerun" if parent.policy == "rerun" else own
    # A child kept in a store of its own: each names the other's store, for
    # `gc` and `recover` (its parent) and for a rerun's discard (the child).
    elsewhere = store.address() != parent.store.address()

    def locked(lease: Held) -> Plan[Run[Any]]:
        # The parent looked at its lease before this call (`lookup`), and may
        # have stalled since, past it: taken over, it must not enter the child,
        # nor write for it once it did (each write looks at the callers' leases).
        still_held(parent, pos)
        lease.under(functools.partial(still_held, parent, pos))
        if flow.options.run_id is None:
            _refuse_anothers(store, flow.name, run_id, parent, pos)
        link = {
            "workflow": parent.workflow, "run_id": parent.run_id, "position": pos,
            "created": parent.created,
        }  # fmt: skip
        if elsewhere:
            link["store"] = parent.store.address()
        try:
            # A rerun of the parent discarded the child's record with every
            # position after the changed one: it runs afresh, as a step there
            # does (a child shared by its given id stays as it is).
            fresh = (pos in parent.discarded or redo) and flow.options.run_id is None
            run = yield from run_locked(
                flow, store, run_id, given, {}, lease, parent=link, on_change=policy,
                caller=parent, rebase=parent.policy == "rebase", restart=fresh, again=written() != digest,
            )  # fmt: skip
        except _FINAL as e:
            raise parent.refuse(e) from None
        except _ENDS_PARENT as e:
            parent.child_stop = parent.child_stop or e
            raise
        prune(store, flow.name, flow.options)
        return run

    child: dict[str, Any] = {"workflow": flow.name, "run_id": run_id}
    if elsewhere:
        child["store"] = store.address()
    try:
        run = yield from holding(store, flow.name, run_id, flow.options.wait, locked)
    except Exception as exc:
        # A refusal, a suspend or a cancel is not the child failing.
        if parent.refusal is None and not isinstance(exc, ControlFlow):
            extra = {"child": dict(child)}
            keep_failure(parent, pos, exc, name=label, started=started, kind="workflow", extra=extra)
        raise
    record = StepRecord(pos, "workflow", label, definition.fingerprint, written(), started=started)
    # The tries that failed before this one stay in the history, as a step's do.
    record.attempts = list(parent.failures.get(pos, []))
    made = store.load_manifest(flow.name, run_id)  # did the child register files?
    if made is not None and _made_artifacts(store, flow.name, run_id, made):
        child["artifacts"] = True
        files = child_files(store, flow.name, run_id)
        if files is not None:
            child["files"] = files
    record.extra["child"] = child
    joined = functools.partial(_joined, flow, parent, definition.writers, args, kwargs)
    if changed_in_place(given.signature, args, kwargs, flow.name, digest, joined):
        record.extra["in_place"] = True  # its replay is a changed call (`replay.lookup`)
        warn(in_place_warning(flow.name, "workflow"))
    value = commit(parent, record, run.value)
    return Run(
        run_id, flow.name, "completed", value, None, run.resumed_from_step,
        run.steps_replayed, run.steps_executed, run.fingerprint,
    )  # fmt: skip


def _joined(
    flow: Flow, parent: RunState, writers: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any], digest: str
) -> str:
    """The child call's digest: what it reads of the parent's arguments (a
    workflow defined in the parent's body), and the code of the modules its
    arguments name when one of its steps looks modules up (`named`)."""
    digest = with_held(flow.fn, digest, parent.argument_values, parent.bodies)
    return given_digest(writers, digest, args, kwargs, flow.name)


def _with_writes(writers: list[Any], digest: str, label: str, fp: str) -> str:
    """`digest` joined with what each of `writers` writes that another step
    reads, as it is now: a replay of the child's result cannot redo it."""
    for fn in writers:
        digest = with_written(fn, digest, label, fp)
    return digest


def _offer_replayed(store: Store, child: dict[str, Any], caller: RunState) -> None:
    """The inputs offered to a child run replayed from its caller's record,
    checked against the answers it (or a child of its own) recorded, as
    `run_locked` checks them for a child it enters: one given again is a
    repeat, used up for its callers too, not taken by a later wait of
    theirs that was never asked; another is left to those waits, with a
    warning. What cannot be read changes nothing: the replay goes on."""
    try:
        ctx = load_context(store, child["workflow"], child["run_id"], "refuse")
        ctx.callers_inputs = [caller.inputs, *caller.callers_inputs]
        ctx.awaited = caller.awaited
        usable_inputs(ctx, dict(caller.inputs))
        inner = [r.extra.get("child") for r in ctx.records.values() if r.kind == "workflow"]
    except (KeyError, TypeError, CorruptRecordError, IntegrityError, StorageError):
        return
    for link in inner:
        if isinstance(link, dict) and caller.inputs:
            _offer_replayed(store, link, caller)


def child_run_id(
    flow: Flow, parent: RunState, pos: Position, given: inspect.BoundArguments
) -> str:
    """The child's own id when one is given (`with_options(run_id=...)` or
    the decorator's `run_id=`), else `<parent run id>.<position>`: stable
    for the same parent call, whatever the arguments."""
    if flow.options.run_id is not None:
        return derive_run_id(flow.name, flow.options.run_id, given)
    made = f"{parent.run_id}.{format_position(pos)}"
    if len(made.encode("utf-8", "surrogatepass")) > MAX_KEY_PART:  # "Choose a shorter one" said nothing here
        fn = flow.name.rpartition(".")[2]
        raise ConfigurationError(
            f"the child run of {flow.name} at position {format_position(pos)} of run {parent.run_id[:40]!r}... "
            f"cannot be named: a child run's id is its parent's, a dot and the position, and {len(made)} "
            f"characters are more than the {MAX_KEY_PART} bytes a file or object name holds (child runs "
            f"nested too deep: a workflow calling itself). Give it an id of its own from its arguments, "
            f"e.g. {fn}.with_options(run_id=lambda *a, **k: ...)(...) or @durable.workflow(run_id=...), "
            "or make the recursion a loop over steps in one workflow. Nothing was run at that position"
        )
    return check_key_part("run id", made)


def _refuse_anothers(store: Store, workflow: str, run_id: str, parent: RunState, pos: Position) -> None:
    """A derived child id is this parent call's own. Run ids may hold dots,
    so two calls can derive one id: run "v2" at position 0.0.0 (in an
    asyncio task) and run "v2.0.0" at position 0 both name "v2.0.0.0", and
    the second replayed the child the first made. So do parent runs of one
    workflow and id kept in two stores, calling a child kept in a store of
    its own: each restarted the other's child (`made_before`), whose
    finished steps ran again. A child run held by another parent call, or
    started on its own, is refused instead."""
    raw = store.load_manifest(workflow, run_id)
    if raw is None:
        return
    link = decode_manifest(store, workflow, run_id, raw, summary_only=True).extra.get("parent")
    mine = (parent.workflow, parent.run_id, format_position(pos))
    if isinstance(link, dict):
        at = as_position(link.get("position"))
        same = (link.get("workflow"), link.get("run_id"), at is not None and format_position(at))
        if same == mine and not _made_in_another_store(store, link, parent):
            return
        held = f"run {link.get('run_id')!r} of {link.get('workflow')!r} made it"
        held += f" (the one in store {link.get('store') or store.address()})" * (same == mine)
    else:
        held = "it was started on its own, not by a workflow"
    raise parent.refuse(
        ConfigurationError(
            f"the child run id {run_id!r} of {workflow!r}, derived from run {parent.run_id!r} "
            f"and position {format_position(pos)}, names a run that is not this call's: {held} "
            "(run ids with dots can derive the same child id). Nothing was executed. Give the "
            f"child its own id (with_options(run_id=...)), or remove run {run_id!r} "
            "(durable rm) if it is left over."
        )
    )


def _made_in_another_store(store: Store, link: dict[str, Any], parent: RunState) -> bool:
    """Whether a parent run of this workflow and id, but not this one, made
    the child, in another store (the link's, else the child's own) that
    still holds it: not this run restarted (`made_before`), whose old
    manifest is gone. A store that cannot be read says nothing: as before."""
    if link.get("created") == parent.created:
        return False
    there = str(link.get("store") or store.address())
    if there == parent.store.address():
        return False
    try:
        other = store_at(there)
        raw = other.load_manifest(parent.workflow, parent.run_id)
        made = raw is not None and decode_manifest(
            other, parent.workflow, parent.run_id, raw, summary_only=True
        ).created == link.get("created")
    except Exception:  # another store, unreadable from here: no claim on the child
        return False
    return made


def _made_artifacts(store: Store, workflow: str, run_id: str, raw: bytes) -> bool:
    """Whether a child run that just ran registered files (its manifest's
    summary says so): then they count for its parent (`child_stale`)."""
    manifest = decode_manifest(store, workflow, run_id, raw, summary_only=True)
    return bool(manifest.extra.get("artifacts"))
