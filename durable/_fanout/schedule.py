"""How a `loop_over` block runs its items: one by one in this process, on
an executor or a Dask cluster (a window of items in flight, results written
here as they come back), or as concurrent coroutines. The record side is in
`block`; the public function is `_api.ops.loop_over`."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from .._core.context import enter_plain
from .._core.logs import add_note
from .._core.plan import apause, check_stop, pause, stop
from .._core.tracing import carrier
from ..errors import Cancelled, ControlFlow, SerializationError, Stopped
from .delays import Delays
from .executors import Trace, acall_item, call_item
from .gate import halt, keep_running
from .handout import HandedBack, NotStarted
from .interrupt import Deferred
from .pools import open_pool
from .progress import ProgressCallback, Reporter
from .tries import Tries

_NONE: Any = object()  # no result yet: an exception then is the item's own


def sync_block(
    block: Any,
    fn: Callable[[Any], Any],
    items: list[Any],
    executor: object,
    limit: int | None,
    progress: ProgressCallback | None,
) -> list[Any]:
    if block.replayed:
        return block.replay()  # type: ignore[no-any-return]
    results, todo = block.restore()
    reporter = Reporter(block.label, len(items), len(items) - len(todo), progress, block.where)

    kept: set[int] = set()

    def done(index: int, value: Any) -> None:
        results[index] = value
        block.save_item(index, value)
        kept.add(index)
        reporter.item_done()
        if block.checkpoint:
            check_stop()  # a graceful stop: the finished items are kept
        block.between_items()

    def keep(index: int, value: Any) -> None:
        """An item that finished after a Ctrl-C (`gate`)."""
        if index not in kept:
            block.save_item(index, value)
            kept.add(index)

    with _settled(block, reporter):
        ends = done, (keep if block.checkpoint else None)
        _run_blocking(fn, items, todo, executor, limit, ends, traced(block), block.tries)
    return block.commit(results)  # type: ignore[no-any-return]


def _run_blocking(
    fn: Callable[[Any], Any],
    items: list[Any],
    todo: list[int],
    executor: object,
    limit: int | None,
    ends: tuple[Callable[[int, Any], None], Callable[[int, Any], None] | None],
    trace: Trace,
    tries: Tries,
) -> None:
    """`ends`: what takes an item's result, and what keeps one that
    finishes after a Ctrl-C (None: the block keeps no item)."""
    if executor is None:
        for i in todo:
            _run_here(fn, items, i, ends[0], trace, tries)
        return
    pool = open_pool(executor, fn, trace)
    window = limit or pool.window
    queue = iter(todo)
    flying: dict[Any, int] = {}
    with Deferred() as ctrl_c:
        _loop(pool, items, queue, flying, (window, trace[1]), ends, tries, ctrl_c)


def _loop(
    pool: Any,
    items: list[Any],
    queue: Iterator[int],
    flying: dict[Any, int],
    shape: tuple[int, str],
    ends: tuple[Callable[[int, Any], None], Callable[[int, Any], None] | None],
    tries: Tries,
    ctrl_c: Deferred,
) -> None:
    """The items in flight on `pool`, `window` at most (`shape`), until none
    is left; a Ctrl-C taken between two waits (`interrupt`)."""
    (window, label), (done, keep) = shape, ends
    later = Delays(tries.look(), tries.stops)
    back = HandedBack()
    failed: tuple[int, Exception] | None = None
    stopped: Stopped | Cancelled | None = None
    try:
        _fill(pool, items, queue, flying, window, tries)
        while flying or later.items:
            if not flying:
                with ctrl_c.direct():
                    later.pause()  # nothing in flight: until the first delay is over
            # Sorting by index keeps the record order reproducible when several finish at once.
            ready = pool.wait(flying, ctrl_c.bound(later.timeout())) if flying else set()
            ctrl_c.check()
            again: list[int] = []  # handed back unstarted (`handout`): the same try goes out again
            for handle in sorted(ready, key=flying.__getitem__):
                i = flying.pop(handle)
                try:
                    value = _NONE
                    value = pool.outcome(handle)
                    done(i, value)
                except NotStarted as late:
                    back.again(late)
                    again.append(i)
                except (Stopped, Cancelled) as stop_now:  # raised once this item was kept
                    # As after a failure: the items running finish and are kept too
                    # (dropped, they would run again on resume), none starts.
                    stopped = stopped or stop_now
                    _unstart(pool, flying)
                except Exception as exc:
                    # Not the item: a record that could not be written stops all.
                    if value is not _NONE and not isinstance(exc, SerializationError):
                        raise
                    wait = tries.again(i, exc) if value is _NONE else None
                    if wait is not None and failed is None and stopped is None:
                        later.add(i, wait)  # its next try, once its delay is over
                        continue
                    if failed is None:
                        failed = (i, exc)
                        _unstart(pool, flying)
            try:
                if keep is not None and stopped is None:  # checkpointed: as `done` between two items,
                    check_stop()  # a graceful stop starts no try more (a retry due, the next item)
                due = again + later.due() if failed is None and stopped is None else later.clear()
                scopes = [tries.scope(i) for i in due]  # a retry's boundary (`KeptTries.scope`)
            except (Cancelled, Stopped) as stop_now:  # looked for while an item waits its delay
                stopped, due, scopes = stopped or stop_now, later.clear(), []
                _unstart(pool, flying)
            ctrl_c.check()  # one that came while the outcomes were taken: nothing more starts
            for handle, i in zip(pool.submit([items[i] for i in due], scopes), due, strict=True):
                flying[handle] = i
            if failed is None and stopped is None:
                _fill(pool, items, queue, flying, window, tries)
    except KeyboardInterrupt:
        keep_running(pool, halt(pool, flying), keep, label)
        raise
    except BaseException:
        halt(pool, flying)
        raise
    if stopped is not None:
        raise stopped
    if failed is not None:
        index, error = failed
        raise annotate(error, index, len(items), label)


def _unstart(pool: Any, flying: dict[Any, int]) -> None:
    """Items not started yet are dropped; running ones finish and are kept."""
    for handle in pool.unstart(list(flying)):
        del flying[handle]


def _run_here(
    fn: Callable[[Any], Any],
    items: list[Any],
    i: int,
    done: Callable[[int, Any], None],
    trace: Trace,
    tries: Tries,
) -> None:
    """The tries of item i in this thread, until one returns or its budget ends."""
    wait = 0.0
    while True:
        value = _NONE
        if wait:  # waited here, where the run's cancel is looked for meanwhile
            pause(wait, look=tries.look(), stops=tries.stops)
        scope = tries.scope(i)  # a retry's boundary: what it raises is not the item failing
        try:
            value = call_item(fn, items[i], trace, scope=scope)
            done(i, value)
            return
        except Exception as exc:
            if value is _NONE:
                again = tries.again(i, exc)
                if again is not None:
                    wait = again
                    continue
            if value is _NONE or isinstance(exc, SerializationError):
                annotate(exc, i, len(items), trace[1])  # the item failed, or its result
            raise


def _fill(
    pool: Any, items: list[Any], queue: Any, flying: dict[Any, int], window: int, tries: Tries
) -> None:
    batch = list(itertools.islice(queue, max(0, window - len(flying))))
    scopes = [tries.scope(i) for i in batch]
    for handle, i in zip(pool.submit([items[i] for i in batch], scopes), batch, strict=True):
        flying[handle] = i


async def async_block(
    block: Any,
    fn: Callable[[Any], Any],
    items: list[Any],
    limit: int,
    progress: ProgressCallback | None,
) -> list[Any]:
    if block.replayed:
        return block.replay()  # type: ignore[no-any-return]
    results, todo = block.restore()
    reporter = Reporter(block.label, len(items), len(items) - len(todo), progress, block.where)
    queue = iter(todo)
    failures: list[BaseException] = []
    trace = traced(block)

    async def worker() -> None:
        # Each worker is its own task, so this marks only its own context.
        reset = enter_plain()
        try:
            for i in queue:
                if failures or (block.checkpoint and stop.requested):
                    return  # a graceful stop takes no new item; finished ones are kept
                try:
                    value = await _tried(fn, items[i], i, trace, block.tries)
                except Cancelled as exc:  # seen between two tries: as between two items
                    failures.append(exc)
                    return
                except Exception as exc:
                    failures.append(annotate(exc, i, len(items), block.label))
                    return
                try:
                    results[i] = value
                    block.save_item(i, value)
                    reporter.item_done()
                    block.between_items()
                except Cancelled as exc:  # no worker takes another item
                    failures.append(exc)
                    return
                except Exception as exc:  # a record that cannot be written stops every worker
                    if isinstance(exc, SerializationError):  # the item's result: it failed
                        annotate(exc, i, len(items), block.label)
                    failures.append(exc)
                    return
        finally:
            reset()

    import asyncio  # loaded already: an event loop runs this

    with _settled(block, reporter):
        await asyncio.gather(*(worker() for _ in range(min(limit, len(todo)))))
        if failures:
            raise failures[0]
        if block.checkpoint:
            check_stop()
    return block.commit(results)  # type: ignore[no-any-return]


async def _tried(fn: Callable[[Any], Any], item: Any, i: int, trace: Trace, tries: Tries) -> Any:
    """The tries of an async item, until one returns or its budget ends."""
    wait = 0.0
    while True:
        if wait:  # waited here, where the run's cancel is looked for meanwhile
            await apause(wait, look=tries.look(), stops=tries.stops)
        scope = tries.scope(i)  # a retry's boundary: what it raises is not the item failing
        try:
            return await acall_item(fn, item, trace, scope)
        except Exception as exc:
            again = tries.again(i, exc)
            if again is None:
                raise
            wait = again


@contextlib.contextmanager
def _settled(block: Any, reporter: Reporter) -> Iterator[None]:
    """How a block ends, sync or async: a failure is kept for history (a
    suspend is not a failure), and the progress line is closed either way."""
    failed = False
    try:
        yield
    except ControlFlow:  # a suspend is not the block failing
        raise
    except Exception as exc:
        failed = True
        block.fail(exc)
        raise
    finally:
        reporter.close(failed)


def traced(block: Any) -> Trace:
    """Where the block's items run in the run's trace (see `_core.tracing`)."""
    return (carrier(block.where[0]) if block.where[0] else None), block.label


def annotate(exc: Exception, index: int, total: int, label: str) -> Exception:
    """Say which item failed while keeping the exception's own type (so that
    `except ValueError` around the workflow still works)."""
    if isinstance(exc, ControlFlow):
        return exc
    add_note(exc, f"durable: item {index} (of {total}) of {label} failed")
    return exc
