"""lookup -> execute (with retries) -> record, written once as a generator
"plan" that yields what it needs done; `_drive` runs it sync or async.
The plan never calls user code itself, so one body of logic serves both."""

from __future__ import annotations

import contextlib
import hashlib
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import _artifacts, _codec, _context, _redact
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
    DefinitionChangedError,
    LeaseLostError,
    NondeterminismError,
    SerializationError,
    StorageError,
    Suspended,
)
from ._records import (
    Attempt,
    StepRecord,
    attempts_name,
    item_name,
    keep_encoded,
    load_stored,
    record_name,
    seal,
    unseal,
)

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

    def fingerprint_in(self, ctx: RunContext) -> str:
        """The fingerprint as of this run's start (helpers and constants
        may have changed since decoration), else the decoration-time one."""
        return ctx.fingerprints.get(id(self), self.fingerprint)


_SCALARS = (str, int, float, bool, type(None))


def args_digest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if not kwargs and all(type(a) in _SCALARS for a in args):
        # The common case (ids, names, numbers): repr is exact and stable.
        text = "\x1f".join(f"{type(a).__name__}:{a!r}" for a in args)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    try:
        return _codec.canonical_digest([list(args), kwargs])[:16]
    except _codec.NotCanonical:
        return None


def step_plan(
    ctx: RunContext,
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pos: int | None = None,
) -> Plan[Any]:
    """`pos` is given when the caller took the position already (async steps
    take it when called, so that `asyncio.gather` order is call order)."""
    if pos is None:
        pos = ctx.take_position()
    digest = args_digest(args, kwargs)
    fp = spec.fingerprint_in(ctx)
    rec = lookup(ctx, pos, spec.name, fp, digest)
    reopened = _recheck(ctx, spec, rec) if rec is not None and rec.persisted else None
    if reopened is not None:
        rec = None
    if rec is not None and rec.persisted:
        return load_value(ctx, rec)
    failures = list(ctx.failures.get(pos, []))
    started = now()
    attempt = 0
    while True:
        found: list[tuple[str, str | None]] = []
        try:
            value = yield Call(spec.fn, args, kwargs, _step_scope(pos, attempt, found))
            break
        except Suspended:
            raise
        except Exception as exc:
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
    return commit(ctx, record, value, persist=spec.persist and not redacted)


def _step_scope(
    pos: int, attempt: int, found: list[tuple[str, str | None]]
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
    why = _artifacts.check_record(ctx, rec, spec.artifacts_policy) if rec.artifacts else None
    if why is not None:
        ctx.replayed -= 1  # lookup() counted it as replayed
        discard_from(ctx, rec.position)
        ctx.policy = "rerun"
        _went_live(ctx, rec.position)
    return why


def _attempt(exc: BaseException) -> Attempt:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return Attempt(type(exc).__qualname__, str(exc)[:2000], tb[-4000:], now())


def lookup(ctx: RunContext, pos: int, name: str, fp: str, digest: str | None) -> StepRecord | None:
    """The finished record at pos to replay, or None to execute live."""
    rec = ctx.records.get(pos)
    if rec is None:
        _went_live(ctx, pos)
        return None
    if rec.name != name:
        if ctx.policy != "rerun":
            raise NondeterminismError(ctx.run_id, pos, rec.name, name)
        discard_from(ctx, pos)  # DESIGN §2: rerun discards from the first difference
        _went_live(ctx, pos)
        return None
    args_changed = rec.args_digest is not None and digest is not None and rec.args_digest != digest
    if rec.fingerprint != fp or args_changed:
        return _changed(ctx, rec, fp, digest)
    if rec.persisted:
        ctx.replayed += 1
    else:
        _went_live(ctx, pos)  # a persist=False marker: the step runs again
    return rec


def _changed(ctx: RunContext, rec: StepRecord, fp: str, digest: str | None) -> StepRecord | None:
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
        why = "arguments changed" if rec.fingerprint == fp else "code changed"
        raise DefinitionChangedError(
            ctx.workflow, ctx.run_id, rec.fingerprint, fp, {name: why}, position=pos
        )
    discard_from(ctx, pos)
    _went_live(ctx, pos)
    return None


def _went_live(ctx: RunContext, pos: int) -> None:
    if ctx.first_live is None:
        ctx.first_live = pos
    check_stop()  # a graceful stop never starts another operation
    if getattr(ctx.lease, "lost", False):
        raise LeaseLostError(ctx.run_id, pos)


def discard_from(ctx: RunContext, pos: int) -> None:
    """Forget the record at pos and every later one (on_change="rerun")."""
    names = [record_name(p) for p in ctx.records if p >= pos]
    names += [attempts_name(p) for p in ctx.failures if p >= pos]
    names += [f"timers/{p:08d}" for p in ctx.timers if p >= pos]
    names += [item_name(p, i) for p, done in ctx.items.items() if p >= pos for i in done]
    ctx.store.drop_records(ctx.workflow, ctx.run_id, names)
    for table in (ctx.records, ctx.failures, ctx.timers, ctx.items):
        for p in [p for p in table if p >= pos]:
            del table[p]


def load_value(ctx: RunContext, rec: StepRecord) -> Any:
    assert rec.encoding is not None
    where = (ctx.workflow, ctx.run_id)
    key = f"{ctx.workflow}/{ctx.run_id}/{record_name(rec.position)}"
    return load_stored(
        ctx.store, where, rec.encoding, rec.value, rec.blob, position=rec.position, name=key
    )


def commit(ctx: RunContext, record: StepRecord, value: Any, *, persist: bool = True) -> Any:
    """Encode and write a finished operation's record; return the value the
    run continues with (the one already recorded, if another writer won)."""
    record.ended = now()
    record.persisted = persist
    if persist:
        _encode_into(ctx, record, value)
    data = seal(record.to_bytes(), ctx.store.signing_key)
    existing = ctx.store.save_record(ctx.workflow, ctx.run_id, record_name(record.position), data)
    ctx.executed += 1
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
    try:
        record.encoding, data = _codec.encode_value(value, allow_pickle=ctx.store.allow_pickle)
    except Exception as e:
        raise SerializationError(
            record.name, type(value).__qualname__, f"{type(e).__name__}: {e}"
        ) from e
    record.value, record.blob = keep_encoded(ctx.store, (ctx.workflow, ctx.run_id), data)


def save_failures(
    ctx: RunContext,
    pos: int,
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
