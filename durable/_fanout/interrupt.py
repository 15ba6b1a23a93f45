"""A plain Ctrl-C while a `loop_over` block waits for its pool, taken at a
safe point of the workflow thread.

Python raises KeyboardInterrupt at any bytecode boundary of the main
thread: also inside `concurrent.futures.wait`, between two of the locks it
takes (`_AcquireFutures.__enter__`), or inside `Condition.__enter__` once its
lock is taken. That lock then stays held by the workflow thread, a worker's
`set_result` blocks on it for ever, and the process never exits (seen:
`tests/test_fanout_ctrl_c.py` hung under load, a SIGINT landing just as the
block began to wait). While the block runs, a first SIGINT only marks the
block, which raises KeyboardInterrupt itself between two waits; a second
one stops at once, as before. Only in the main thread and over Python's own
handler: a program's own SIGINT handler, or `stop_on_signals()`'s, is left
alone."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType, TracebackType
from typing import Any

POLL = 0.1  # the longest a first Ctrl-C waits to be seen, in seconds


class Deferred:
    """`with Deferred() as ctrl_c:` around a block's loop: `ctrl_c.check()`
    between waits, `ctrl_c.bound(timeout)` for each wait, `ctrl_c.direct()`
    around a wait that holds no future (a retry delay's pause)."""

    def __init__(self) -> None:
        self.pressed = False
        self.previous: Any = None

    def __enter__(self) -> Deferred:
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None
        if self.pressed and kind is None:  # pressed as the block ended: the user's all the same
            raise KeyboardInterrupt

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.pressed:  # the second: at once
            raise KeyboardInterrupt
        self.pressed = True

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    def bound(self, timeout: float | None) -> float | None:
        """A wait's timeout, so that a first Ctrl-C is seen within `POLL`."""
        if self.previous is None:
            return timeout
        return POLL if timeout is None else min(timeout, POLL)

    @contextlib.contextmanager
    def direct(self) -> Iterator[None]:
        """Python's own handler meanwhile: the pause holds no lock a worker needs."""
        if self.previous is None:
            yield
            return
        self.check()
        signal.signal(signal.SIGINT, self.previous)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, self._on_sigint)
