"""Operations other than steps: `loop_over` blocks (run by `_fanout.schedule`,
recorded by `_fanout.block`), durable sleep, suspend, wait_for."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, NoReturn, TypeVar, overload

from .._calls import keywords
from .._core import cancel, notify
from .._core.bound import note_made
from .._core.context import RunContext, RunState, active_run, current_state
from .._core.identity import value_digest
from .._core.inputs import wait_for_input
from .._core.plan import Pause, Plan, apause, drive_async, drive_sync, named, pause
from .._core.replay import commit, kept_timer, lookup
from .._core.stillheld import lease_lost
from .._fanout.progress import ProgressCallback
from .._storage.clock import check_wait, now
from .._storage.keys import Position, timer_name
from .._storage.records import StepRecord, seal
from .._storage.timers import timer_bytes
from ..errors import ConfigurationError, LeaseLostError, Suspended

T = TypeVar("T")
R = TypeVar("R")
DEFAULT_ASYNC_CONCURRENCY = 16


@overload
def loop_over(  # type: ignore[overload-overlap]
    fn: Callable[[T], Coroutine[Any, Any, R]],
    items: Iterable[T],
    *,
    name: str | None = None,
    executor: object = None,
    checkpoint_items: bool = False,
    max_concurrency: int | None = None,
    progress: ProgressCallback | None = None,
) -> Coroutine[Any, Any, list[R]]: ...
@overload
def loop_over(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    name: str | None = None,
    executor: object = None,
    checkpoint_items: bool = False,
    max_concurrency: int | None = None,
    progress: ProgressCallback | None = None,
) -> list[R]: ...
@keywords("loop_over", runs_steps=True)
def loop_over(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    name: str | None = None,
    executor: object = None,
    checkpoint_items: bool = False,
    max_concurrency: int | None = None,
    progress: ProgressCallback | None = None,
) -> Any:
    """Apply `fn` to every item; the results come back in item order.

    Inside a workflow the block takes one position and records the whole
    list once, when every item is done; a re-run replays the list without
    calling `fn`. Steps called inside run without records of their own (a
    step passed as `fn` keeps its retries).

    - `executor`: a `concurrent.futures.Executor` (thread or process pool) or
      a `dask.distributed.Client`; None runs the items one by one here.
    - `checkpoint_items`: record each item as it finishes, so that a crash
      re-runs only the items without a result.
    - `max_concurrency`: items in flight at once. Default: 16 for an
      `async def` fn, twice a pool's workers, four times a Dask cluster's
      threads (so that no worker waits for its next item).
    - `progress`: called with a `durable.Progress` after each item; a
      one-line bar is drawn on stderr too when it is a terminal.

    The first item that fails (after its step's retries) fails the block
    with its own exception, noting the item's index; items already running
    finish first, and with `checkpoint_items=True` they are kept.

    With an `async def` fn it returns an awaitable and runs the items as
    concurrent coroutines (no executor)."""
    items = _listed(fn, items)
    if not callable(fn):  # "'int' object is not callable" from the first item, outside a run
        raise ConfigurationError(f"loop_over() takes a function first, then the items; not {fn!r}")
    _check_block_options(max_concurrency, checkpoint_items, name)
    if progress is not None and not callable(progress):
        raise ConfigurationError("loop_over(progress=...) takes a callable or None")
    # The fan-out (pools, the cache of items, signals) is loaded by the first
    # block: a body that only sleeps, suspends or waits never imports it.
    from .._fanout.executors import check_executor
    from .._fanout.schedule import async_block, sync_block

    check_executor(executor)  # before the block takes a position: a bad call records nothing
    if inspect.iscoroutinefunction(fn):
        if executor is not None:
            raise ConfigurationError(
                "an async def function runs as coroutines in this process: loop_over() takes "
                "no executor for it. Pass a plain def function to use an executor."
            )
        limit = max_concurrency or DEFAULT_ASYNC_CONCURRENCY
        block = async_block(_open(fn, items, name, checkpoint_items), fn, items, limit, progress)
        return named(block, f"durable.loop_over({name or getattr(fn, '__name__', 'fn')})")
    block = _open(fn, items, name, checkpoint_items)
    return sync_block(block, fn, items, executor, max_concurrency, progress)


def _listed(fn: object, items: Any) -> list[Any]:
    """The items, or a ConfigurationError naming the argument: a bare
    "'int' object is not iterable" did not say which, nor a swap."""
    try:
        each = iter(items)  # not `list(items)`: a TypeError of a generator's own is its own
    except TypeError:
        if not callable(items):
            raise ConfigurationError(
                f"loop_over() takes the items as an iterable (a list, a range, ...), not {items!r}"
            ) from None
        raise ConfigurationError(
            f"loop_over(fn, items): the function first, then the items; given {fn!r}, then "
            f"{items!r}"
        ) from None
    return list(each)


def _check_block_options(limit: object, checkpoint: object, name: object) -> None:
    # A str limit failed with "'<' not supported"; a truthy "no" checkpointed.
    if limit is not None and (type(limit) is not int or limit < 1):
        raise ConfigurationError(
            f"loop_over(max_concurrency=...) must be a whole number, at least 1; not {limit!r}"
        )
    if not isinstance(checkpoint, bool):
        raise ConfigurationError(
            f"loop_over(checkpoint_items=...) takes True or False, not {checkpoint!r}"
        )
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigurationError(
            f"loop_over(name=...) takes a non-empty string or None, not {name!r}"
        )


def _open(fn: Callable[..., Any], items: list[Any], name: str | None, checkpoint: bool) -> Any:
    """The block's record side; its position is taken now, at call time."""
    from .._fanout.block import Block, PlainBlock

    ctx = active_run()
    if ctx is None:
        return PlainBlock(fn, items, name)
    if ctx.bodies:  # `loop_over(make_scale(factors), items)`
        note_made(fn, ctx.bodies)
    return Block(ctx, fn, items, name, checkpoint)


def sleep(seconds: float) -> None:
    """Sleep durably: the wake-up time is recorded first, so a resumed run
    sleeps only what is left. Outside a workflow, a plain sleep. In an
    `async def` workflow use `await durable.asleep(seconds)`."""
    _check_seconds(seconds, "sleep")
    ctx = active_run()
    if ctx is None:
        pause(seconds)
        return
    drive_sync(_sleep_plan(ctx, seconds, ctx.take_position("sleep()")))


def asleep(seconds: float) -> Coroutine[Any, Any, None]:
    """`sleep` for async workflows: the same record, without blocking the
    event loop while it waits. Like an async step, it takes its position
    when called, so `asyncio.gather(asleep(5), fetch(1))` numbers both in
    call order."""
    _check_seconds(seconds, "asleep")
    ctx = active_run()
    if ctx is None:
        return apause(seconds)
    return named(drive_async(_sleep_plan(ctx, seconds, ctx.take_position("asleep()"))), "durable.asleep")


def _check_seconds(seconds: object, who: str) -> None:
    """Before a position is taken: a bad duration records nothing."""
    check_wait(seconds, f"{who}()")


def _sleep_plan(ctx: RunState, seconds: float, pos: Position) -> Plan[None]:
    digest = value_digest(seconds)
    rec = lookup(ctx, pos, "sleep", "sleep", digest)
    if rec is not None:
        notify.replayed(ctx, rec)
        return None
    kept = kept_timer(ctx, pos, digest)  # a changed duration is a changed call
    until = now() + seconds if kept is None else kept
    if ctx.timers.get(pos) != (until, digest):  # a new timer, or one kept under "rebase"
        ctx.timers[pos] = (until, digest)
        name = timer_name(pos)
        data = seal(timer_bytes(until, digest), ctx.store.signing_key)
        try:
            ctx.store.replace_record(ctx.workflow, ctx.run_id, name, data)
        except LeaseLostError as e:  # final, as any write's (`replay.commit`)
            raise lease_lost(ctx, pos, e) from None
    remaining = until - now()
    if remaining > 0:  # a cancel during it leaves the timer, the run ends `cancelled`
        yield Pause(remaining, cancel.look(ctx))
    record = StepRecord(pos, "sleep", "sleep", "sleep", digest, started=until - seconds)
    commit(ctx, record, None)
    return None


def suspend(reason: str) -> NoReturn:
    """Stop the run as `suspended` (waiting for a person); the caller gets
    `Suspended`. Resume it with the missing arguments as overrides."""
    if not isinstance(reason, str):  # suspend(5) suspended, its reason 5
        raise ConfigurationError(
            f"suspend() takes the reason as a str (what the run waits for), not {reason!r}"
        )
    ctx = current_state()
    if ctx is None:
        raise ConfigurationError("suspend() can only be called inside a workflow run")
    step = RunContext(ctx).step_index  # in a step, the run waits at the step's position
    raise ctx.refuse(Suspended(ctx.run_id, reason, position=ctx.position if step is None else step))


def wait_for(name: str) -> Any:
    """Wait for an input from outside the run: the first time the run gets
    here without it, the run is `suspended` (the caller gets `Suspended`);
    `workflow.resume(run_id, inputs={name: value})` (or `durable run ...
    --resume --input name=VALUE`) replays the body before it and returns
    the value, recorded at this position. Later replays return the recorded
    value. A supplied value answers the first wait of its name without a
    recorded answer, once: the next wait of the same name suspends again.
    Another value for a recorded wait the run is not stopped at is refused.
    An answer is given for the run's arguments: after they changed, it is
    asked again under on_change="rerun" and refused under "refuse"."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"wait_for() takes the input's name as a string, not {name!r}")
    ctx = active_run()
    if ctx is None:
        raise ConfigurationError(
            f"wait_for({name!r}) can only be called in a workflow body (not outside a run, "
            "nor inside a step)"
        )
    return wait_for_input(ctx, name, ctx.take_position(f"wait_for({name!r})"))
