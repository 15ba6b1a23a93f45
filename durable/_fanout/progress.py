"""Progress of a `loop_over` block: a callback with a small dataclass, and a
one-line bar on stderr drawn only when stderr is a terminal.

The bar is on by default (for terminals only); `enable_bar(False)` or
`DURABLE_PROGRESS=0` turns it off, and `durable run` can call
`enable_bar(True)` to force it back on after a library switched it off."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Progress:
    """Where a `loop_over` block stands, given to its `progress=` callback
    after each item finishes (items restored from checkpoints count as done)."""

    name: str
    done: int
    total: int
    elapsed: float  # seconds since the block started in this process
    rate: float  # items finished per second in this process (restored ones excluded)

    @property
    def remaining(self) -> float | None:
        """Estimated seconds left, None until the rate is known."""
        if self.rate <= 0:
            return None
        return (self.total - self.done) / self.rate


ProgressCallback = Callable[[Progress], None]

# Module-level switch for the default bar. It only ever draws on a terminal.
bar_enabled: bool = os.environ.get("DURABLE_PROGRESS", "1").lower() not in ("0", "false", "no")
# A block shorter than this never draws: a bar that flashes for 50 ms is noise.
DELAY = 0.5
# Redraws are throttled so that a 10,000-item block does not flood the terminal.
INTERVAL = 0.1


def enable_bar(on: bool = True) -> None:
    """Turn the default stderr progress bar on or off for this process."""
    global bar_enabled
    bar_enabled = on


def _stderr_is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Reporter:
    """Counts finished items and tells the callback and, maybe, the bar."""

    def __init__(
        self, name: str, total: int, restored: int, callback: ProgressCallback | None
    ) -> None:
        self.name = name
        self.total = total
        self.restored = restored
        self.done = restored
        self.callback = callback
        self.started = time.monotonic()
        self.stream: TextIO = sys.stderr
        self.draw = bar_enabled and total > 0 and _stderr_is_terminal(self.stream)
        self.drawn = False
        self.last_draw = 0.0

    def snapshot(self) -> Progress:
        elapsed = time.monotonic() - self.started
        live = self.done - self.restored
        rate = live / elapsed if elapsed > 0 else 0.0
        return Progress(self.name, self.done, self.total, elapsed, rate)

    def item_done(self) -> None:
        self.done += 1
        state = self.snapshot()
        if self.draw:
            self._maybe_draw(state)
        if self.callback is not None:
            self.callback(state)

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self.drawn:
            self._draw(self.snapshot())
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False

    def _maybe_draw(self, state: Progress) -> None:
        if state.elapsed < DELAY and state.done < state.total:
            return
        if state.elapsed - self.last_draw < INTERVAL and state.done < state.total:
            return
        self._draw(state)

    def _draw(self, state: Progress) -> None:
        self.last_draw = state.elapsed
        self.drawn = True
        self.stream.write("\r" + render(state, shutil.get_terminal_size().columns) + "\x1b[K")
        self.stream.flush()


def render(state: Progress, columns: int = 80) -> str:
    """One line: `name [#####.....] 30/50  12.5/s  2.4s  ~1.6s left`."""
    left = state.remaining
    tail = f" {state.done}/{state.total}  {state.rate:.1f}/s  {_secs(state.elapsed)}"
    if left is not None and state.done < state.total:
        tail += f"  ~{_secs(left)} left"
    label = state.name if len(state.name) <= 30 else state.name[:29] + "…"
    width = max(10, min(40, columns - len(label) - len(tail) - 4))
    filled = width * state.done // max(state.total, 1)
    return f"{label} [{'#' * filled}{'.' * (width - filled)}]{tail}"


def _secs(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
