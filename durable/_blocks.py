"""Operations other than steps: loop blocks, durable sleep, suspend."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn, TypeVar

from . import _codec, _engine
from ._context import RunContext, active_run, current_run, enter_plain
from ._engine import Call, Pause, Plan, args_digest, commit, drive_sync, load_value, lookup, now
from ._errors import ConfigurationError, Suspended
from ._fingerprint import fingerprint_function
from ._records import StepRecord, seal
from ._step import _default_name, step_spec

T = TypeVar("T")
R = TypeVar("R")


def loop_over(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    name: str | None = None,
) -> list[R]:
    """Apply fn to every item and record the whole list once, when all are
    done. A re-run replays the list without calling fn at all; steps called
    inside run as plain calls."""
    items = list(items)
    ctx = active_run()
    if ctx is None:
        return [fn(item) for item in items]
    return drive_sync(_loop_plan(ctx, fn, items, name))


def _loop_plan(
    ctx: RunContext, fn: Callable[[T], R], items: list[T], name: str | None
) -> Plan[list[R]]:
    pos = ctx.take_position()
    label = name or f"loop_over({_default_name(fn)})"
    fp = _fingerprint_of(fn)
    rec = lookup(ctx, pos, label, fp, args_digest(tuple(items), {}))
    if rec is not None:
        return load_value(ctx, rec)  # type: ignore[no-any-return]
    started = now()
    results: list[R] = []
    for item in items:
        results.append((yield Call(fn, (item,), {}, enter_plain)))
    record = StepRecord(pos, "loop", label, fp, args_digest(tuple(items), {}), started=started)
    record.extra["items"] = len(items)
    return commit(ctx, record, results)  # type: ignore[no-any-return]


def _fingerprint_of(fn: Callable[..., Any]) -> str:
    spec = step_spec(fn)
    if spec is not None:
        ctx = active_run()
        return spec.fingerprint_in(ctx) if ctx is not None else spec.fingerprint
    try:
        return fingerprint_function(fn).value
    except ConfigurationError:
        raise ConfigurationError(
            f"loop_over cannot fingerprint {fn!r}: pass a @durable.step or a function with "
            "retrievable source"
        ) from None


def sleep(seconds: float) -> None:
    """Sleep durably: the wake-up time is recorded first, so a resumed run
    sleeps only what is left. Outside a workflow, a plain sleep."""
    if seconds < 0:
        raise ConfigurationError("sleep() needs a non-negative number of seconds")
    ctx = active_run()
    if ctx is None:
        _engine.clock.sleep(seconds)
        return
    drive_sync(_sleep_plan(ctx, seconds))


def _sleep_plan(ctx: RunContext, seconds: float) -> Plan[None]:
    pos = ctx.take_position()
    digest = args_digest((seconds,), {})
    if lookup(ctx, pos, "sleep", "sleep", digest) is not None:
        return None
    until = ctx.timers.get(pos)
    if until is None:
        until = now() + seconds
        ctx.timers[pos] = until
        name = f"timers/{pos:08d}"
        ctx.store.replace_record(
            ctx.workflow, ctx.run_id, name, seal(_codec.pack(until), ctx.store.signing_key)
        )
    remaining = until - now()
    if remaining > 0:
        yield Pause(remaining)
    record = StepRecord(pos, "sleep", "sleep", "sleep", digest, started=until - seconds)
    commit(ctx, record, None)
    return None


def suspend(reason: str) -> NoReturn:
    """Stop the run as `suspended` (waiting for a person); the caller gets
    `Suspended`. Resume it with the missing arguments as overrides."""
    ctx = current_run()
    if ctx is None:
        raise ConfigurationError("suspend() can only be called inside a workflow run")
    raise Suspended(ctx.run_id, reason)
