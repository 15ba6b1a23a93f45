"""Threads started in a workflow body work for its run (DESIGN §2: a step
called from a thread the body started gets a position or a clear error). A
new thread starts with an empty context, so a step it called ran as a plain
call: executed, never recorded, and executed again by every resume. Such a
thread is now marked with the run (`context.mark_thread`), and a durable
call made there while the body runs is refused before it runs, which also
keeps the run from completing without that thread's work
(`context.active_run`); `loop_over(step, items, executor=pool)` is the way
to run steps on a pool. Once the body has returned, a durable call made
there is refused still (not final: the run is over): the thread's work is
no record's, and a resume would start it again; a pool's threads are marked
per call submitted (below), so a pool made in a run and kept serves plain
calls.

`threading.Thread.start` and `ThreadPoolExecutor.submit` (which
`ThreadPoolExecutor.map`, `loop.run_in_executor` and `asyncio.to_thread`'s
default executor go through) are wrapped once, when a run starts, and so is
the hand-over of a call to `multiprocessing.pool.ThreadPool`'s threads
(a pool made before the run has threads nobody marked: its calls ran
plainly, and every resume ran them again).
Outside a workflow body they do what they did: inside a step no run is
active (durable calls there are plain calls), and a pool's worker threads
are marked for each call submitted, with the submitter's run or none,
over the mark of the body that happened to start them. A pool module first
imported in a body is wrapped when its first thread starts: the calls
submitted before that reach only threads the body started, marked.
Each is also handed the run whose code (a step's body too) started or fed
it (`hand`): a persist=False step's output made there is that run's to
hold (`unkept.returned`); it had none, and the step returning it on wrote
the secret into its record."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .context import body_run, current_state, mark_thread

_wrapped: set[str] = set()


def install() -> None:
    """Wrap `Thread.start` (once), and `ThreadPoolExecutor.submit` once
    `concurrent.futures` is loaded (a run does not load it: a pool made
    before that is made in a body, whose threads `start` marks)."""
    if "thread" not in _wrapped:
        _wrapped.add("thread")
        _wrap_start()
    pools = sys.modules.get("concurrent.futures.thread")
    if "pool" not in _wrapped and pools is not None:
        _wrapped.add("pool")
        _wrap_submit(pools)
    mp_pools = sys.modules.get("multiprocessing.pool")
    if "mp_pool" not in _wrapped and mp_pools is not None:
        _wrapped.add("mp_pool")
        _wrap_thread_pool(mp_pools.ThreadPool)


def _wrap_start() -> None:
    start = threading.Thread.start

    @functools.wraps(start)
    def start_marked(self: threading.Thread) -> None:
        run, state = body_run(), _state_ref()
        if run is not None or state is not None:
            with contextlib.suppress(AttributeError):  # a subclass with __slots__: unmarked
                self.run = functools.partial(_marked, run, state, self.run)  # type: ignore[method-assign]
        if len(_wrapped) < 3:  # a pool module imported since the run started (in its body)
            install()
        start(self)

    threading.Thread.start = start_marked  # type: ignore[method-assign]


def _wrap_submit(pools: Any) -> None:
    submit: Callable[..., Any] = pools.ThreadPoolExecutor.submit

    @functools.wraps(submit)
    def submit_marked(self: Any, fn: Callable[..., Any], /, *args: Any, **kw: Any) -> Any:
        return submit(self, _for_body(fn), *args, **kw)

    pools.ThreadPoolExecutor.submit = submit_marked


def _wrap_thread_pool(pool: Any) -> None:
    """Every call reaches a ThreadPool's threads through `apply_async` or,
    for map, starmap and imap (sync, async, unordered), through
    `_guarded_task_generation`, made on the submitting thread. Process
    pools (the base class) are left alone: a mark does not pickle."""
    apply_async: Callable[..., Any] = pool.apply_async
    tasks: Callable[..., Any] = pool._guarded_task_generation

    @functools.wraps(apply_async)
    def apply_marked(self: Any, func: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return apply_async(self, _for_body(func), *args, **kw)  # `func=`, as the original

    @functools.wraps(tasks)
    def tasks_marked(self: Any, job: Any, fn: Callable[..., Any], iterable: Any) -> Any:
        return tasks(self, job, _for_body(fn), iterable)

    pool.apply_async = apply_marked
    pool._guarded_task_generation = tasks_marked


def _for_body(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, marked with the run whose body hands it to another thread now,
    or with none: a pool's thread started in a body keeps that mark, and a
    step (or a plain thread) handing it work later is not that body."""
    run = body_run()
    # A pool or a cluster a body made and kept, fed after the run: plain calls.
    run = run if run is not None and run.open else None
    return functools.partial(_marked, run, _state_ref(), fn)


def _marked(run: Any, state: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    before, handed = mark_thread(run), hand(state)
    try:
        return fn(*args, **kwargs)
    finally:
        mark_thread(before)
        hand_back(handed)


class _Handed(threading.local):
    # The run whose code (a step's body too, where no run is active) started this
    # thread or handed it this call, and the process it was handed in (a worker
    # forked from it holds a copy, not the run): a persist=False step called here
    # returns its output to that run's code (`unkept.returned`), which holds it.
    # By weak reference: a thread that outlives the run (a library's I/O loop) keeps none of it.
    state: tuple[int, Any] | None = None


def _state_ref() -> Any:
    state = current_state()
    return None if state is None else weakref.ref(state)


_handed = _Handed()


def hand(state: Any) -> tuple[int, Any] | None:
    """This thread's work is the run's that `state` (a weak reference to its
    `RunState`) refers to (None: no run's); what it was before."""
    before = _handed.state
    _handed.state = None if state is None else (os.getpid(), state)
    return before


def hand_back(before: tuple[int, Any] | None) -> None:
    """Undoes `hand`, given what it returned."""
    _handed.state = before


def handed_state() -> Any:
    """The run (its `RunState`) whose code handed this thread its work, or None."""
    held = _handed.state
    return held[1]() if held is not None and held[0] == os.getpid() else None
