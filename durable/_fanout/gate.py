"""What a plain Ctrl-C does to a `loop_over` block on a pool: items not
started never start, and the items running, which finish anyway (a thread
cannot be stopped and the interpreter waits for it at exit; a process
pool's worker, sent no signal, goes on too), are kept once they finish when
the block checkpoints its items: dropped, they would run a second time on
the resume. A second Ctrl-C stops at once (those items run again then)."""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._core.context import ItemScope


class Unstarted(Exception):
    """The outcome of a thread item that found its gate shut: nobody reads it."""


class Gate:
    """A thread pool's items as its threads see them. The workflow thread
    may learn of an item too late: a Ctrl-C landing in `executor.submit`
    (which waits for a new thread to start) loses the future, while the
    item is queued and will run. So each try says here that it starts, and
    once the gate is shut none does. Only the tries running are held (a
    try that ended leaves nothing: a block of 100,000 items kept a future
    each, 163 MB), and a future is made for each of them when it shuts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shut = threading.Event()
        self.running: dict[int, int] = {}  # try -> its item's index
        self.told: dict[int, cf.Future[Any]] = {}  # try -> its outcome, once shut
        self.tries = itertools.count()

    def run(self, scope: ItemScope | None, call: Callable[..., Any], *args: Any) -> Any:
        """One try of an item. `scope`: the try's in the run, which names its
        item (`tries.ItemKey`); none outside a run, where nothing is kept."""
        index = getattr(scope[2], "index", None) if scope else None
        with self.lock:
            self._check()
            tried = next(self.tries)
            if index is not None:
                self.running[tried] = index
        try:
            value = call(*args, scope=scope)
        except BaseException as exc:
            self._ended(tried, exc, None)
            raise
        self._ended(tried, None, value)
        return value

    def _check(self) -> None:
        if self.shut.is_set():
            raise Unstarted

    def _ended(self, tried: int, exc: BaseException | None, value: Any) -> None:
        with self.lock:
            self.running.pop(tried, None)
            told = self.told.pop(tried, None)
        if told is not None and exc is not None:
            told.set_exception(exc)
        elif told is not None:
            told.set_result(value)

    def close(self) -> dict[cf.Future[Any], int]:
        """Let no try start; the tries running, by a future of their outcome."""
        with self.lock:
            self.shut.set()
            self.told = {tried: cf.Future() for tried in self.running}
            return {future: self.running[tried] for tried, future in self.told.items()}


def keep_running(
    pool: Any,
    running: dict[Any, int],
    keep: Callable[[int, Any], None] | None,
    label: str,
) -> None:
    """Wait for the items running (by handle) and keep each that returns;
    without `keep` (no checkpoints) say only that they finish unkept. What
    failed, or is not there to keep, runs again on the resume."""
    if not running:
        return
    many = f"{len(running)} items" if len(running) > 1 else "1 item"
    _say(
        f"durable: KeyboardInterrupt in {label}; no other item starts, and the {many} running "
        + ("finish unkept (no checkpoint_items: the resume runs the block again)" if keep is None
           else "are kept once they finish (press Ctrl-C again to stop at once: they run "
                "again on the resume)")
    )  # fmt: skip
    waiting = set(running) if keep is not None else set()
    while waiting:
        done, waiting = cf.wait(waiting, return_when=cf.FIRST_COMPLETED)
        for handle in sorted(done, key=running.__getitem__):
            try:
                value = pool.outcome(handle)
            except Exception:
                continue
            keep(running[handle], value)  # type: ignore[misc]


def _say(line: str) -> None:
    # Now, not at exit: the wait that follows (ours, or the interpreter's
    # for its threads) would look like a hang.
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def halt(pool: Any, flying: dict[Any, int]) -> dict[Any, int]:
    """Let no item start any more; the tries running, by handle. A Dask
    cluster's are not waited for: a Ctrl-C in a terminal kills the workers
    of a `LocalCluster` the workflow started, which would never finish them."""
    pool.cancel(flying)
    gate = getattr(pool, "gate", None)
    if not isinstance(gate, Gate):
        return {}
    # Finished, not taken yet (and, on another executor, still running).
    left = {handle: i for handle, i in flying.items() if not handle.cancelled()}
    if pool.threads:
        return {h: i for h, i in left.items() if h.done()} | gate.close()
    return left
