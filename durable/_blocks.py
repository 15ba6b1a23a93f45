"""Operations other than steps: loop blocks (in `_fanout`), durable sleep,
suspend."""

from __future__ import annotations

from typing import NoReturn

from . import _codec, _engine
from ._context import RunContext, active_run, current_run
from ._engine import Pause, Plan, args_digest, commit, drive_sync, lookup, now
from ._errors import ConfigurationError, Suspended
from ._fanout import loop_over
from ._records import StepRecord, seal

__all__ = ["loop_over", "sleep", "suspend"]


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
