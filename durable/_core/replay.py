"""Replay: what every recorded operation (step, block, sleep, child run)
does with its position. `lookup` finds the record to replay or decides to
run live (comparing name, fingerprint and argument digest under the run's
policy), `discard_from` forgets records from a position on and `commit`
writes a finished operation (`loadback` reads a recorded output back)."""

from __future__ import annotations

from collections.abc import MutableMapping
from time import monotonic
from typing import Any

from .._storage import clock, records
from .._storage.base import Store
from .._storage.durability import SyncFailed
from .._storage.keys import (
    Position,
    attempts_name,
    item_name,
    item_of,
    parse_name,
    position_key,
    record_name,
    timer_name,
    top_level,
)
from .._storage.noted import carry
from .._storage.records import StepRecord, seal_record, unseal
from .._storage.timers import timer_of
from ..errors import (
    ConfigurationError,
    CorruptRecordError,
    DefinitionChangedError,
    IntegrityError,
    LeaseLostError,
    NondeterminismError,
    StorageError,
)
from . import cancel, finished, notify, unkept
from .changed import arguments_changed, changed_in_place
from .context import RunState
from .discarded import forget_children
from .loadback import load_value
from .plan import check_stop, stop
from .recorded import Recorded, decode_step_record
from .replayrow import same_fields
from .stillheld import lease_lost, still_held


def same_call(rec: StepRecord, fp: str, digest: str) -> bool:
    """The replay rule (DESIGN §2) of a record: `replayrow.same_fields`."""
    return same_fields(rec.fingerprint, rec.args_digest, fp, digest)


def lookup(
    ctx: RunState,
    pos: Position,
    name: str,
    fp: str,
    digest: str,
    *,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> StepRecord | None:
    """The finished record at pos to replay, or None to execute live.
    `call` (the arguments) only serves the message of a refusal."""
    if ctx.refusal is not None:  # checked on every step, not only the first:
        raise ctx.refusal  # nothing runs after a refusal, even one the body caught
    if ctx.in_tasks:
        ctx.seen.add(pos)
    try:
        rec = ctx.records.get(pos)  # its envelope is checked and it is decoded now
    except (CorruptRecordError, IntegrityError) as e:
        # Damaged or forged: final, nothing at or after it may replay or run.
        raise ctx.refuse(e) from None
    if rec is None:
        went_live(ctx, pos)
        return None
    if rec.name != name:
        if ctx.policy != "rerun":
            raise ctx.refuse(NondeterminismError(ctx.run_id, pos, rec.name, name))
        discard_from(ctx, pos)  # DESIGN §2: rerun discards from the first difference
        went_live(ctx, pos)
        return None
    if not same_call(rec, fp, digest) or rec.extra.get("in_place"):
        return _changed(ctx, rec, fp, digest, call)
    # Equal, so shared: the run keeps every record, each with the call's own
    # strings instead of copies read from the log (`Recorded` leaves them).
    rec.name, rec.fingerprint = name, fp
    if rec.persisted:
        ctx.replayed += 1
    else:
        went_live(ctx, pos)  # a persist=False marker: the step runs again
    return rec


def _changed(
    ctx: RunState,
    rec: StepRecord,
    fp: str,
    digest: str,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> StepRecord | None:
    pos, name = rec.position, rec.name
    if ctx.policy == "rebase":
        # Accept the old output under the new definition, once and for all.
        rec.fingerprint, rec.args_digest, rec.args_bytes = fp, digest, None  # the old call's bytes
        rec.extra = {k: v for k, v in rec.extra.items() if k != "in_place"}
        data = seal_record(rec.to_bytes(), ctx.store.signing_key)
        try:
            ctx.store.replace_record(ctx.workflow, ctx.run_id, record_name(pos), data)
        except LeaseLostError as e:  # final, as any write's (`commit`)
            raise lease_lost(ctx, pos, e) from None
        if rec.persisted:
            ctx.replayed += 1
        return rec
    if ctx.policy != "rerun":
        why = (
            "code changed" if rec.fingerprint != fp
            else arguments_changed(rec, digest, call) if rec.args_digest != digest
            else changed_in_place(rec)
        )  # fmt: skip
        raise ctx.refuse(
            DefinitionChangedError(
                ctx.workflow, ctx.run_id, rec.fingerprint, fp, {name: why}, position=pos
            )
        )
    discard_from(ctx, pos)
    went_live(ctx, pos)
    return None


def kept_timer(ctx: RunState, pos: Position, digest: str) -> float | None:
    """The wake-up time to keep of the timer a sleep at pos (still without a
    finished record) wrote before, or None to start a new one. The timer is
    the same call only with the same duration digest; one written before
    timers kept it (digest None) is never trusted. A changed one is refused,
    discarded with everything after it under "rerun", or kept under "rebase"
    (the caller writes it back with the new digest)."""
    timer = ctx.timers.get(pos)
    if timer is None:
        return None
    until, recorded = timer
    if recorded is not None and recorded == digest:
        return until
    if ctx.policy == "rebase":
        return until
    if ctx.policy != "rerun":
        if recorded is None:
            why = (
                "its timer was written by an older version of durable, without the digest of "
                "the duration, so it cannot be told the same sleep"
            )
        else:
            why = (
                f"the duration changed: the timer (wake-up time) was recorded for a sleep of "
                f"another duration (argument digest {recorded}, now {digest})"
            )
        raise ctx.refuse(
            DefinitionChangedError(
                ctx.workflow, ctx.run_id, "sleep", "sleep", {"sleep": why}, position=pos
            )
        )
    discard_from(ctx, pos)
    return None


def reopen(ctx: RunState, pos: Position) -> None:
    """Forget the record at pos, which lookup() counted as replayed, and
    every later one; run from there as under on_change="rerun" (what it was
    built on is gone: an artifact changed, a cached blob was pruned)."""
    ctx.replayed -= 1
    discard_from(ctx, pos)
    ctx.policy = "rerun"
    went_live(ctx, pos)


def went_live(ctx: RunState, pos: Position) -> None:
    if ctx.first_live is None:
        ctx.first_live = top_level(pos)
    if not ctx.announced:
        notify.announce(ctx)  # now it is known how many operations replayed
    if stop.requested:  # a graceful stop never starts another operation
        check_stop()
    boundary(ctx, pos)


def boundary(ctx: RunState, pos: Position) -> None:
    """Before anything more runs for the run (an operation, a step's or an
    item's retry, a block's next item): a refusal taken by another of its
    tasks or workers ends it, a cancel (a clock read; the store only now and
    then) and a lost lease too (another process may be executing it now)."""
    if ctx.refusal is not None:
        raise ctx.refusal
    if ctx.cancel_due <= monotonic():  # a look when due: before every live operation
        cancel.poll(ctx)
    still_held(ctx, pos)  # its callers' leases too: a child runs for them


def fence(ctx: RunState, pos: Position) -> None:
    """Before a write made for the run outside `commit` (a cache entry and
    its reference): the run's lease must still hold."""
    try:
        ctx.store.guard(ctx.workflow, ctx.run_id)
    except LeaseLostError as e:
        raise lease_lost(ctx, pos, e) from None


def discard_from(ctx: RunState, pos: Position) -> None:
    """Forget the record at pos and every later one (on_change="rerun"), in
    `position_key` order: 2 < 2.0.0 < 2.1.0 < 3, except those this attempt
    looked up already (`ctx.seen`). In async code a later position can be
    reached first (a task's 2.0.0 before the body's 2, the body's 3 before
    a task's 2.1.0): its record was replayed and used, or is being made, and
    forgetting it would run a finished step again after a crash."""
    start, seen = position_key(pos), ctx.seen
    tables: tuple[MutableMapping[Position, Any], ...] = (ctx.records, ctx.failures, ctx.timers, ctx.items)
    gone = [
        [p for p in table if position_key(p) >= start and (p == pos or p not in seen)]
        for table in tables
    ]
    names = [record_name(p) for p in gone[0]] + [attempts_name(p) for p in gone[1]]
    names += [timer_name(p) for p in gone[2]]
    names += [item_name(p, i) for p in gone[3] for i in ctx.items[p]]
    later, failed = [p for p in gone[0] if p != pos], [p for p in gone[1] if p != pos]
    forget_children(ctx, [*later, *failed])  # a child there runs afresh (`child.child_plan`)
    ctx.discarded.update(later, failed)  # one that failed too
    finished.lower(ctx, gone[0])  # first: a holder killed after the drop is no loss
    ctx.store.drop_records(ctx.workflow, ctx.run_id, names)
    for table, positions in zip(tables, gone, strict=True):
        for p in positions:
            del table[p]


def commit(
    ctx: RunState, record: StepRecord, value: Any, *, persist: bool = True, live: bool = True
) -> Any:
    """Encode and write a finished operation's record; return the value the
    run continues with (the one already recorded, if another writer won).
    A record the cache filled is already encoded; `live=False`: nothing ran."""
    if not ctx.open:  # an asyncio task or thread that outlived the body: the run is over
        raise _outlived(ctx, record)
    record.ended = clock.clock.time()  # `clock.now()`, without its call
    if persist and ctx.unkept and record.encoding is None and unkept.holds(ctx, value):
        persist, record.extra["unkept"] = False, True  # kept as a persist=False output is: a marker
    record.persisted = persist
    try:
        if persist and record.encoding is None:
            encode_into(ctx, record, value)  # a blob, for a large value
        if ctx.attempt is not None:  # what a resume after a kill finds it made
            record.extra = carry(record.extra, ctx.attempt, ctx.committed)
        data = seal_record(record.to_bytes(), ctx.store.signing_key)
        name = record_name(record.position)
        existing = ctx.store.save_record(ctx.workflow, ctx.run_id, name, data)
    except LeaseLostError as e:  # checked before each write; `e.written` if found after one
        raise lease_lost(ctx, record.position, e) from None
    except StorageError as e:  # a failed sync: final, no later record would be durable
        raise (ctx.refuse(e) if isinstance(e.__cause__, SyncFailed) else e) from e.__cause__
    ctx.executed += live
    ctx.committed += existing is None
    if live and ctx.watched:  # `notify.executed` returns at once otherwise
        notify.executed(ctx, record)
    if existing is not None and persist:
        body = unseal(
            existing,
            ctx.store.signing_key,
            run_id=ctx.run_id,
            position=record.position,
            name=record_name(record.position),
        )
        won = StepRecord.from_bytes(body)  # another call's output is never this call's:
        if won.name != record.name or not same_call(won, record.fingerprint, record.args_digest or ""):
            raise ctx.refuse(NondeterminismError(ctx.run_id, record.position, won.name, record.name))
        ctx.records[record.position] = won
        value = load_value(ctx, won)
    else:
        ctx.records.keep(record)
    if stop.requested:  # a graceful stop takes effect once this record is safe
        check_stop()
    return value


def _outlived(ctx: RunState, record: StepRecord) -> ConfigurationError:
    return ConfigurationError(
        f"{record.kind} {record.name!r} at position {record.position} of run {ctx.run_id!r} finished after its workflow body had returned (in an asyncio task or a thread that outlived it); "
        "its output is not recorded, since another call may hold the run now, and a resume runs it again. Await every task the workflow creates before it returns.")  # fmt: skip


def encode_into(ctx: RunState, record: StepRecord, value: Any) -> None:
    records.encode_into(ctx.store, (ctx.workflow, ctx.run_id), record, value)


def load_context(store: Store, workflow: str, run_id: str, policy: str) -> RunState:
    ctx = RunState(run_id=run_id, workflow=workflow, store=store, policy=policy)
    ctx.records = records = Recorded(store, run_id)
    sealed: dict[Position, bytes] = {}  # most records: a local log puts them here
    for name, raw in store.load_sealed(workflow, run_id, sealed).items():
        parsed = parse_name(name)
        if parsed is None:
            item = item_of(name)
            if item is not None:  # a checkpointed loop_over item, decoded by its block
                body = _unseal(store, raw, run_id, item[0], name)
                ctx.items.setdefault(item[0], {})[item[1]] = body
            continue
        head, pos = parsed
        if head == "steps":  # most records: checked and decoded when reached
            sealed[pos] = raw
        elif head == "timers":
            ctx.timers[pos] = timer_of(_unseal(store, raw, run_id, pos, name))
        else:
            rec = decode_step_record(store, raw, run_id, pos, name)
            ctx.failures[pos], given_up = rec.attempts, rec.extra.get("given_up")
            if isinstance(given_up, int):  # else written before retry budgets were kept
                ctx.given_up[pos] = given_up
            if type(rec.extra.get("retries")) is int:  # else written before budgets kept theirs
                ctx.budgets[pos] = rec.extra["retries"]
            if rec.args_digest is not None:  # else written before they kept their call
                ctx.tried_by[pos] = (rec.fingerprint, rec.args_digest)
            if "child" in rec.extra:  # a rerun discarding it removes that run (`discarded`)
                ctx.failed_children[pos] = rec.extra["child"]
    records.keep_all_sealed(sealed)
    return ctx


def _unseal(store: Store, raw: bytes, run_id: str, pos: Position | None, name: str) -> bytes:
    return unseal(raw, store.signing_key, run_id=run_id, position=pos, name=name)
