"""`loop_over`: one recorded block over many items, run in this process, on
an executor or a Dask cluster, or as concurrent coroutines.

The block takes one position and is recorded once, when every item is done.
With `checkpoint_items=True` each finished item is also recorded as it
completes (`items/<position>/<index>`), so a crash costs only the items that
were in flight; those records are deleted once the block record is written."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar, overload

from ._blockrec import Block, PlainBlock
from ._context import active_run, enter_plain
from ._errors import ConfigurationError
from ._progress import ProgressCallback, Reporter
from ._workers import acall_item, call_item, check_executor, open_pool

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
      `async def` fn, twice the executor's workers otherwise.
    - `progress`: called with a `durable.Progress` after each item.

    With an `async def` fn it returns an awaitable and runs the items as
    concurrent coroutines (no executor)."""
    items = list(items)
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigurationError("loop_over(max_concurrency=...) must be at least 1")
    if progress is not None and not callable(progress):
        raise ConfigurationError("loop_over(progress=...) takes a callable or None")
    check_executor(executor)  # before the block takes a position: a bad call records nothing
    if inspect.iscoroutinefunction(fn):
        if executor is not None:
            raise ConfigurationError(
                "an async def function runs as coroutines in this process: loop_over() takes "
                "no executor for it. Pass a plain def function to use an executor."
            )
        limit = max_concurrency or DEFAULT_ASYNC_CONCURRENCY
        return _async_block(_open(fn, items, name, checkpoint_items), fn, items, limit, progress)
    block = _open(fn, items, name, checkpoint_items)
    if block.replayed:
        return block.replay()
    results, todo = block.restore()
    reporter = Reporter(block.label, len(items), len(items) - len(todo), progress)

    def done(index: int, value: Any) -> None:
        results[index] = value
        block.save_item(index, value)
        reporter.item_done()

    try:
        _run_blocking(fn, items, todo, executor, max_concurrency, done, block.label)
    except Exception as exc:
        block.fail(exc)
        raise
    finally:
        reporter.close()
    return block.commit(results)


def _open(fn: Callable[..., Any], items: list[Any], name: str | None, checkpoint: bool) -> Any:
    """The block's record side; its position is taken now, at call time."""
    ctx = active_run()
    if ctx is None:
        return PlainBlock(fn, items, name)
    return Block(ctx, fn, items, name, checkpoint)


def _run_blocking(
    fn: Callable[[Any], Any],
    items: list[Any],
    todo: list[int],
    executor: object,
    limit: int | None,
    done: Callable[[int, Any], None],
    label: str,
) -> None:
    if executor is None:
        for i in todo:
            try:
                value = call_item(fn, items[i])
            except Exception as exc:
                annotate(exc, i, len(items), label)
                raise
            done(i, value)
        return
    pool = open_pool(executor, fn)
    window = limit or pool.window
    queue = iter(todo)
    flying: dict[Any, int] = {}
    failed: tuple[int, Exception] | None = None
    try:
        _fill(pool, items, queue, flying, window)
        while flying:
            # Sorting by index keeps the record order reproducible when several finish at once.
            for handle in sorted(pool.wait(flying), key=flying.__getitem__):
                i = flying.pop(handle)
                try:
                    value = pool.outcome(handle)
                except Exception as exc:
                    if failed is None:
                        failed = (i, exc)
                        # Items not started yet are dropped; running ones finish and are kept.
                        for h in pool.unstart(list(flying)):
                            del flying[h]
                    continue
                done(i, value)
            if failed is None:
                _fill(pool, items, queue, flying, window)
    except BaseException:
        pool.cancel(flying)
        raise
    if failed is not None:
        index, error = failed
        raise annotate(error, index, len(items), label)


def _fill(pool: Any, items: list[Any], queue: Any, flying: dict[Any, int], window: int) -> None:
    batch = list(itertools.islice(queue, max(0, window - len(flying))))
    for handle, i in zip(pool.submit([items[i] for i in batch]), batch, strict=True):
        flying[handle] = i


async def _async_block(
    block: Any, fn: Callable[[Any], Any], items: list[Any], limit: int, progress: Any
) -> list[Any]:
    if block.replayed:
        return block.replay()  # type: ignore[no-any-return]
    results, todo = block.restore()
    reporter = Reporter(block.label, len(items), len(items) - len(todo), progress)
    queue = iter(todo)
    failures: list[BaseException] = []

    async def worker() -> None:
        # Each worker is its own task, so this marks only its own context.
        reset = enter_plain()
        try:
            for i in queue:
                if failures:
                    return
                try:
                    value = await acall_item(fn, items[i])
                except Exception as exc:
                    failures.append(annotate(exc, i, len(items), block.label))
                    return
                try:
                    results[i] = value
                    block.save_item(i, value)
                    reporter.item_done()
                except Exception as exc:  # a record that cannot be written stops every worker
                    failures.append(exc)
                    return
        finally:
            reset()

    try:
        await asyncio.gather(*(worker() for _ in range(min(limit, len(todo)))))
        if failures:
            raise failures[0]
    except Exception as exc:
        block.fail(exc)
        raise
    finally:
        reporter.close()
    return block.commit(results)  # type: ignore[no-any-return]


def annotate(exc: Exception, index: int, total: int, label: str) -> Exception:
    """Say which item failed while keeping the exception's own type (so that
    `except ValueError` around the workflow still works)."""
    note = f"durable: item {index} (of {total}) of {label} failed"
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]} [{note}]", *exc.args[1:])
    else:
        exc.args = (*exc.args, note)
    return exc
