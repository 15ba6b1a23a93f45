"""What a plain Ctrl-C does to a `loop_over` block on a pool: items not
started never start, and the items running, which finish anyway (a thread
cannot be stopped and the interpreter waits for it at exit; a process
pool's worker goes on too, with the items queued to it, unless a terminal's
Ctrl-C reached it and failed its item), are kept once they finish when
the block checkpoints its items: dropped, they would run a second time on
the resume. A second Ctrl-C stops at once (those items run again then)."""

from __future__ import annotations

import concurrent.futures as cf
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._core.context import ItemScope


class Gate:
    """A thread pool's tries, each with a future made here before the
    executor is handed it: a Ctrl-C landing in `executor.submit` (which
    waits for a new thread to start), or before the workflow thread stored
    what `submit` returned, would lose the only handle of a try that runs,
    maybe to its end while the workflow thread stops: its item, not kept,
    ran again on the resume. Once the gate is shut no try starts. A future
    is held only until the workflow thread took its outcome (`taken`): a
    block of 100,000 items held 163 MB when every finished try's was."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shut = False
        self.held: dict[cf.Future[Any], int | None] = {}  # try -> its item's index

    def submit(
        self, executor: cf.Executor, scope: ItemScope | None, call: Callable[..., Any], *args: Any
    ) -> cf.Future[Any]:
        """One try of an item. `scope`: the try's in the run, which names its
        item (`tries.ItemKey`); none outside a run, where nothing is kept."""
        future: cf.Future[Any] = cf.Future()
        with self.lock:
            self.held[future] = getattr(scope[2], "index", None) if scope else None
        executor.submit(self._run, future, scope, call, *args)
        return future

    def _run(self, future: cf.Future[Any], scope: ItemScope | None, call: Callable[..., Any],
             *args: Any) -> None:  # fmt: skip
        with self.lock:
            start = not self.shut and future.set_running_or_notify_cancel()
            if not start:  # cancelled, or the gate shut before it started
                future.cancel()
                self.held.pop(future, None)
        if not start:
            return
        try:
            value = call(*args, scope=scope)
        except BaseException as exc:  # the workflow thread's to raise (`taken`)
            future.set_exception(exc)
        else:
            future.set_result(value)

    def taken(self, future: cf.Future[Any]) -> Any:
        """The outcome of a try, which the gate then no longer holds."""
        with self.lock:
            self.held.pop(future, None)
        return future.result()

    def close(self) -> dict[cf.Future[Any], int]:
        """Let no try start; the tries running or finished and not taken, by
        a future of their outcome."""
        with self.lock:
            self.shut = True
            for future in self.held:
                future.cancel()  # one not started never starts
            return {f: i for f, i in self.held.items() if i is not None and not f.cancelled()}


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
            # A worker's own KeyboardInterrupt (a terminal's Ctrl-C reaches
            # the whole process group) is that item's: the others are kept.
            if handle.cancelled() or handle.exception() is not None:
                continue
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
    if pool.threads:  # finished and not taken yet, or running, whatever `flying` holds
        return gate.close()
    # Finished, not taken yet, or still running on another executor.
    return {handle: i for handle, i in flying.items() if not handle.cancelled()}
