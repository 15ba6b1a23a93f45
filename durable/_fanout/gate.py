"""What a plain Ctrl-C does to a `loop_over` block on a pool: items not
started never start, and the items running, which finish anyway (a thread
cannot be stopped and the interpreter waits for it at exit; a process
pool's worker, sent no signal, goes on too), are kept once they finish when
the block checkpoints its items: dropped, they would run a second time on
the resume. A second Ctrl-C stops at once (those items run again then)."""

from __future__ import annotations

import concurrent.futures as cf
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._core.context import ItemScope
from .._core.plan import Look, pause


class Unstarted(Exception):
    """The outcome of a thread item that found its gate shut: nobody reads it."""


class Gate:
    """A thread pool's items as its threads see them. The workflow thread
    may learn of an item too late: a Ctrl-C landing in `executor.submit`
    (which waits for a new thread to start) loses the future, while the
    item is queued and will run. So each item says here that it starts, and
    once the gate is shut none does."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shut = threading.Event()
        self.started: dict[cf.Future[Any], int] = {}

    def run(
        self, scope: ItemScope | None, wait: float, call: Callable[..., Any], *args: Any
    ) -> Any:
        """One try of an item, `wait` seconds from now (its retry delay,
        which shutting the gate cuts short: that try never starts). `scope`:
        the try's in the run, which names its item (`tries.ItemKey`); none
        outside a run, where nothing is kept."""
        if wait:
            pause(wait, look=Look(0.2, self._check))
        outcome: cf.Future[Any] = cf.Future()
        index = getattr(scope[2], "index", None) if scope else None
        with self.lock:
            if self.shut.is_set():
                raise Unstarted
            if index is not None:
                self.started[outcome] = index
        try:
            value = call(*args, scope=scope)
        except BaseException as exc:
            with self.lock:  # a failed try leaves nothing to keep
                self.started.pop(outcome, None)
            outcome.set_exception(exc)
            raise
        outcome.set_result(value)
        return value

    def _check(self) -> None:
        if self.shut.is_set():
            raise Unstarted

    def close(self) -> dict[cf.Future[Any], int]:
        """Let no item start; the tries that did, by outcome."""
        with self.lock:
            self.shut.set()
            return dict(self.started)


def keep_running(
    pool: Any,
    running: dict[Any, int],
    keep: Callable[[int, Any], None],
    label: str,
) -> None:
    """Wait for the items running (by handle) and keep each that returns.
    What failed, or is not there to keep, runs again on the resume."""
    if not running:
        return
    many = f"{len(running)} items" if len(running) > 1 else "1 item"
    sys.stderr.write(
        f"durable: KeyboardInterrupt in {label}; keeping the {many} running once they "
        "finish (press Ctrl-C again to stop at once: they run again on the resume)\n"
    )
    sys.stderr.flush()
    waiting = set(running)
    while waiting:
        done, waiting = cf.wait(waiting, return_when=cf.FIRST_COMPLETED)
        for handle in sorted(done, key=running.__getitem__):
            try:
                value = pool.outcome(handle)
            except Exception:
                continue
            keep(running[handle], value)


def halt(pool: Any, flying: dict[Any, int]) -> dict[Any, int]:
    """Let no item start any more; the tries running, by handle. A Dask
    cluster's are not waited for: a Ctrl-C in a terminal kills the workers
    of a `LocalCluster` the workflow started, which would never finish them."""
    pool.cancel(flying)
    if not isinstance(getattr(pool, "gate", None), Gate):
        return {}
    if pool.threads:
        return pool.gate.close()  # type: ignore[no-any-return]
    return {handle: i for handle, i in flying.items() if not handle.cancelled()}
