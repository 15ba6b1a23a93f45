"""lookup -> execute (with retries) -> record, written once as a generator
"plan" that yields what it needs done; `_drive` runs it sync or async.
The plan never calls user code itself, so one body of logic serves both."""

from __future__ import annotations

import contextlib
import inspect
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from . import _artifacts, _cache, _context, _redact
from ._context import RunContext
from ._drive import Call as Call
from ._drive import Pause as Pause
from ._drive import Plan as Plan
from ._drive import Stopped as Stopped
from ._drive import check_stop as check_stop
from ._drive import drive_async as drive_async
from ._drive import drive_sync as drive_sync
from ._drive import now as now
from ._drive import stop as stop
from ._errors import (
    ArtifactMissingError,
    CorruptRecordError,
    DefinitionChangedError,
    LeaseLostError,
    NondeterminismError,
    StorageError,
    Suspended,
    preview_of,
)
from ._identity import call_digest
from ._records import (
    Attempt,
    Position,
    StepRecord,
    attempts_name,
    encode_into,
    item_name,
    load_stored,
    position_key,
    record_name,
    seal,
    timer_name,
    top_level,
    unseal,
)

if TYPE_CHECKING:
    from ._cache import Cache

T = TypeVar("T")


@dataclass(frozen=True)
class StepSpec:
    """What the engine needs to know of a step."""

    name: str
    fingerprint: str
    fn: Callable[..., Any]
    retries: int = 0
    retry_delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 60.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    persist: bool = True
    artifacts: Callable[[Any], Iterable[Any]] | None = None
    artifacts_policy: str = "rerun"
    verify: str = "digest"
    # How the decorator fingerprinted it, so a run can fingerprint it afresh.
    pinned_name: str | None = None
    version: str | None = None
    deep: bool = True
    # Computed once at decoration: the argument digest binds every call to it.
    signature: inspect.Signature | None = field(default=None, compare=False)
    cache: Cache | None = field(default=None, compare=False)  # see `_cache`

    def fingerprint_in(self, ctx: RunContext) -> str:
        """The fingerprint as of this run's start (helpers and constants
        may have changed since decoration), else the decoration-time one."""
        return ctx.fingerprints.get(id(self), self.fingerprint)


def step_plan(
    ctx: RunContext,
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pos: Position | None = None,
) -> Plan[Any]:
    """`pos` is given when the caller took the position already (async steps
    take it when called, so that `asyncio.gather` order is call order)."""
    if pos is None:
        pos = ctx.take_position(f"step {spec.name!r}")
    # Before the position is looked up: a call that does not bind fails at once.
    digest = call_digest(spec.signature, args, kwargs, spec.name)
    fp = spec.fingerprint_in(ctx)
    rec = lookup(ctx, pos, spec.name, fp, digest, call=(args, kwargs))
    reopened = _recheck(ctx, spec, rec) if rec is not None and rec.persisted else None
    if reopened is not None:
        rec = None
    if rec is not None and rec.persisted:
        try:
            return load_value(ctx, rec)
        except CorruptRecordError:
            if not _cache.blob_gone(ctx, rec):
                raise
            _reopen(ctx, rec.position)
            reopened, rec = "its cached output was pruned", None
    ticket = _cache.ticket_in_run(ctx, spec, args, kwargs) if spec.cache is not None else None
    hit = ticket.lookup() if ticket is not None else None
    if ticket is not None and hit is not None:  # computed by another run or call
        return commit(ctx, _cache.served(ctx, ticket, hit[0], pos, fp, digest), hit[1], live=False)
    failures = list(ctx.failures.get(pos, []))
    started = now()
    attempt = 0
    while True:
        found: list[tuple[str, str | None]] = []
        try:
            value = yield Call(spec.fn, args, kwargs, _step_scope(pos, attempt, found))
            break
        except Exception as exc:
            if ctx.refusal is not None or isinstance(exc, Suspended):
                raise  # a refusal inside the step body is not the step failing
            failures.append(_attempt(exc))
            save_failures(ctx, pos, failures, name=spec.name, started=started)
            if attempt >= spec.retries or not isinstance(exc, spec.retry_on):
                raise
            yield Pause(min(spec.retry_delay * spec.backoff**attempt, spec.max_delay))
            attempt += 1
    derived = spec.artifacts(value) if spec.artifacts is not None else ()
    produced = _artifacts.produced(ctx, pos, spec.name, found + list(derived), spec.verify)
    if rec is not None:  # a persist=False marker is already there
        ctx.executed += 1
        return value
    record = StepRecord(pos, "step", spec.name, fp, digest, started=started)
    record.attempts = failures
    record.artifacts = produced
    if reopened is not None:
        record.extra["reopened"] = reopened
    redacted = _redact.holds_redacted(value)
    if redacted:
        record.extra["redacted"] = True
    elif ticket is not None:
        value = _cache.stored(ctx, ticket, record, value)
    return commit(ctx, record, value, persist=spec.persist and not redacted)


def _step_scope(
    pos: Position, attempt: int, found: list[tuple[str, str | None]]
) -> Callable[[], Callable[[], None]]:
    def enter() -> Callable[[], None]:
        leave_step = _context.enter_step(pos, attempt)
        stop_collecting = _artifacts.collect_into(found)

        def reset() -> None:
            stop_collecting()
            leave_step()

        return reset

    return enter


def _recheck(ctx: RunContext, spec: StepSpec, rec: StepRecord) -> str | None:
    """Before a record is replayed: when an artifact it lists is missing or
    changed, forget it and every later record (they were built on it), run
    the rest as under on_change="rerun", and return why."""
    try:
        why = _artifacts.check_record(ctx, rec, spec.artifacts_policy) if rec.artifacts else None
    except ArtifactMissingError as e:
        raise ctx.refuse(e) from None
    if why is not None:
        _reopen(ctx, rec.position)
    return why


def _reopen(ctx: RunContext, pos: Position) -> None:
    """Forget the record at pos, which lookup() counted as replayed, and
    every later one; run from there as under on_change="rerun"."""
    ctx.replayed -= 1
    discard_from(ctx, pos)
    ctx.policy = "rerun"
    _went_live(ctx, pos)


def _attempt(exc: BaseException) -> Attempt:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return Attempt(type(exc).__qualname__, str(exc)[:2000], tb[-4000:], now())


def same_call(rec: StepRecord, fp: str, digest: str) -> bool:
    """The replay rule (DESIGN §2): same fingerprint and argument digest. A
    record without a digest (written before every call had one) is another call."""
    return rec.fingerprint == fp and rec.args_digest is not None and rec.args_digest == digest


def lookup(
    ctx: RunContext,
    pos: Position,
    name: str,
    fp: str,
    digest: str,
    *,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> StepRecord | None:
    """The finished record at pos to replay, or None to execute live.
    `call` (the arguments) only serves the message of a refusal."""
    ctx.check_refused()  # nothing runs after a refusal, even one the body caught
    rec = ctx.records.get(pos)
    if rec is None:
        _went_live(ctx, pos)
        return None
    if rec.name != name:
        if ctx.policy != "rerun":
            raise ctx.refuse(NondeterminismError(ctx.run_id, pos, rec.name, name))
        discard_from(ctx, pos)  # DESIGN §2: rerun discards from the first difference
        _went_live(ctx, pos)
        return None
    if not same_call(rec, fp, digest):
        return _changed(ctx, rec, fp, digest, call)
    if rec.persisted:
        ctx.replayed += 1
    else:
        _went_live(ctx, pos)  # a persist=False marker: the step runs again
    return rec


def _changed(
    ctx: RunContext,
    rec: StepRecord,
    fp: str,
    digest: str,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> StepRecord | None:
    pos, name = rec.position, rec.name
    if ctx.policy == "rebase":
        # Accept the old output under the new definition, once and for all.
        rec.fingerprint, rec.args_digest = fp, digest
        data = seal(rec.to_bytes(), ctx.store.signing_key)
        ctx.store.replace_record(ctx.workflow, ctx.run_id, record_name(pos), data)
        if rec.persisted:
            ctx.replayed += 1
        return rec
    if ctx.policy != "rerun":
        why = "code changed" if rec.fingerprint != fp else _arguments_changed(rec, digest, call)
        raise ctx.refuse(
            DefinitionChangedError(
                ctx.workflow, ctx.run_id, rec.fingerprint, fp, {name: why}, position=pos
            )
        )
    discard_from(ctx, pos)
    _went_live(ctx, pos)
    return None


def _arguments_changed(
    rec: StepRecord, digest: str | None, call: tuple[tuple[Any, ...], dict[str, Any]] | None
) -> str:
    now_called = ""
    if call is not None:
        shown = [preview_of(a, 60) for a in call[0]]
        shown += [f"{k}={preview_of(v, 60)}" for k, v in call[1].items()]
        now_called = f"called now as {rec.name}({', '.join(shown)}); "
    return (
        f"arguments changed: {now_called}the record was made by a call with other "
        f"arguments (argument digest {rec.args_digest or 'unknown'}, now {digest or 'unknown'})"
    )


def _went_live(ctx: RunContext, pos: Position) -> None:
    if ctx.first_live is None:
        ctx.first_live = top_level(pos)
    check_stop()  # a graceful stop never starts another operation
    # Nor does a lost lease: another process may be executing this run now.
    check = getattr(ctx.lease, "check", None)
    try:
        if check is not None:
            check()
    except LeaseLostError as e:
        raise ctx.refuse(LeaseLostError(ctx.run_id, pos, why=e.why)) from None


def discard_from(ctx: RunContext, pos: Position) -> None:
    """Forget the record at pos and every later one (on_change="rerun"), in
    `position_key` order: 2 < 2.0.0 < 2.1.0 < 3."""
    start = position_key(pos)
    tables: tuple[dict[Position, Any], ...] = (ctx.records, ctx.failures, ctx.timers, ctx.items)
    gone = [[p for p in table if position_key(p) >= start] for table in tables]
    names = [record_name(p) for p in gone[0]] + [attempts_name(p) for p in gone[1]]
    names += [timer_name(p) for p in gone[2]]
    names += [item_name(p, i) for p in gone[3] for i in ctx.items[p]]
    ctx.store.drop_records(ctx.workflow, ctx.run_id, names)
    for table, positions in zip(tables, gone, strict=True):
        for p in positions:
            del table[p]


def load_value(ctx: RunContext, rec: StepRecord) -> Any:
    assert rec.encoding is not None
    where = (ctx.workflow, ctx.run_id)
    key = f"{ctx.workflow}/{ctx.run_id}/{record_name(rec.position)}"
    return load_stored(
        ctx.store, where, rec.encoding, rec.value, rec.blob, position=rec.position, name=key
    )


def commit(
    ctx: RunContext, record: StepRecord, value: Any, *, persist: bool = True, live: bool = True
) -> Any:
    """Encode and write a finished operation's record; return the value the
    run continues with (the one already recorded, if another writer won).
    A record the cache filled is already encoded; `live=False`: nothing ran."""
    record.ended = now()
    record.persisted = persist
    try:
        if persist and record.encoding is None:
            _encode_into(ctx, record, value)  # a blob, for a large value
        data = seal(record.to_bytes(), ctx.store.signing_key)
        name = record_name(record.position)
        existing = ctx.store.save_record(ctx.workflow, ctx.run_id, name, data)
    except LeaseLostError as e:  # checked before each write: nothing was written
        raise ctx.refuse(LeaseLostError(ctx.run_id, record.position, why=e.why)) from None
    ctx.executed += live
    if existing is not None and persist:
        body = unseal(
            existing,
            ctx.store.signing_key,
            run_id=ctx.run_id,
            position=record.position,
            name=record_name(record.position),
        )
        won = StepRecord.from_bytes(body)
        ctx.records[record.position] = won
        value = load_value(ctx, won)
    else:
        ctx.records[record.position] = record
    check_stop()  # a graceful stop takes effect once this record is safe
    return value


def _encode_into(ctx: RunContext, record: StepRecord, value: Any) -> None:
    encode_into(ctx.store, (ctx.workflow, ctx.run_id), record, value)


def save_failures(
    ctx: RunContext,
    pos: Position,
    failures: list[Attempt],
    *,
    name: str = "",
    started: float = 0.0,
    kind: str = "step",
) -> None:
    """Keep the failed attempts at pos (history shows them as `kind`)."""
    rec = StepRecord(
        pos, "attempts", name, "", None, persisted=False, started=started, attempts=failures
    )
    if kind != "step":
        rec.extra["kind"] = kind
    ctx.failures[pos] = failures
    data = seal(rec.to_bytes(), ctx.store.signing_key)
    # History only: the failure being recorded matters more than a store
    # that cannot take it (the same fault usually caused it: disk full).
    with contextlib.suppress(StorageError):
        ctx.store.replace_record(ctx.workflow, ctx.run_id, attempts_name(pos), data)
