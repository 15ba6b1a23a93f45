"""Progress people can see, a consumer of the event stream: a `tqdm.auto`
bar for each `loop_over` block (items done out of the block's items) and
one for each run (operations done out of the previous attempt's count,
when known). Notebooks get tqdm's widget bar (its text bar without
ipywidgets), terminals its text bar; nothing is drawn when stderr is
neither a terminal nor a notebook's stream.

Bars are on by default; `enable_bar(False)` or `DURABLE_PROGRESS=0` turns
them off, and `durable run` can call `enable_bar(True)` to turn them back on.
A block's `progress=` callback gets a `Progress` after each item, bar or not."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from .._core import events
from .._errortext import warn
from .._frozen import Frozen, dataclass
from .._settings import env_flag
from ..errors import ConfigurationError


@dataclass(frozen=True)
class Progress(Frozen):
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



def _bars_by_env() -> bool:
    try:
        return env_flag("DURABLE_PROGRESS", True)
    except ConfigurationError as e:  # a progress bar never stops a run: say so, keep going
        warn(str(e))
        return True


bar_enabled: bool = _bars_by_env()
# A bar shows only after this many seconds: one that flashes for 50 ms is noise.
DELAY = 0.5


def enable_bar(on: bool = True) -> None:
    """Turn the progress bars on or off for this process."""
    global bar_enabled
    bar_enabled = on


_seen: tuple[int, bool] = (0, False)  # (id of the stderr checked, whether bars show there)


def visible() -> bool:
    """Bars are on and stderr is a terminal or a notebook kernel's stream
    (checked once per stream: this runs before every step)."""
    global _seen
    if not bar_enabled:
        return False
    stream = sys.stderr
    if _seen[0] != id(stream):
        _seen = (id(stream), _shows_bars(stream))
    return _seen[1]


def _shows_bars(stream: Any) -> bool:
    if type(stream).__module__.startswith("ipykernel"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def _size(stream: Any) -> dict[str, int]:
    """The terminal's size; 80x24 where it says 0 (a pseudo-terminal
    nobody sized, where tqdm would hide every bar). Nothing in a notebook,
    where tqdm sizes its own bar."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return {}
    return {"ncols": size.columns or 80, "nrows": size.lines or 24}


class Reporter:
    """Counts a block's finished items; tells its `progress=` callback and
    the event stream (which draws the bar)."""

    def __init__(
        self,
        name: str,
        total: int,
        restored: int,
        callback: ProgressCallback | None,
        where: tuple[str, str, str] = ("", "", ""),
    ) -> None:
        self.name = name
        self.total = total
        self.restored = restored
        self.done = restored
        self.failed = 0
        self.callback = callback
        self.where = where  # run id, workflow, position ("" outside a run)
        self.started = time.monotonic()
        self.watched = events.detailed()  # asked once per block, not per item
        self._tell(finished=False)

    def snapshot(self) -> Progress:
        elapsed = time.monotonic() - self.started
        live = self.done - self.restored
        rate = live / elapsed if elapsed > 0 else 0.0
        return Progress(self.name, self.done, self.total, elapsed, rate)

    def item_done(self) -> None:
        self.done += 1
        self._tell(finished=False)
        if self.callback is not None:
            self.callback(self.snapshot())

    def close(self, failed: bool = False) -> None:
        self.failed = int(failed)
        self._tell(finished=True)

    def _tell(self, *, finished: bool) -> None:
        if not self.watched:
            return
        run_id, workflow, position = self.where
        events.emit(
            events.BlockProgress(
                run_id,
                workflow,
                name=self.name,
                position=position,
                done=self.done,
                total=self.total,
                failed=self.failed,
                restored=self.restored,
                finished=finished,
            )
        )


class Bars:
    """The bars open now, by run and by block."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, str], Any] = {}

    def consume(self, event: events.Event) -> None:
        if isinstance(event, events.BlockProgress):
            self._block(event)
        elif isinstance(event, events.RunStarted):
            if visible():
                total = event.steps_total
                self._start((event.run_id, ""), event.run_id, total, "step")
        elif isinstance(event, (events.StepExecuted, events.StepReplayed)):
            bar = self.open.get((event.run_id, ""))
            if bar is not None and "." not in event.position:  # top-level operations only
                bar.update(1)
        elif isinstance(event, events.ENDS):
            self._close((event.run_id, ""))

    def _block(self, event: events.BlockProgress) -> None:
        key = (event.run_id, event.position or event.name)
        bar = self.open.get(key)
        if bar is None and not event.finished and visible():
            bar = self._start(key, event.name, event.total, "item", event.done)
        if bar is not None:
            bar.update(event.done - bar.n)
        if event.finished:
            self._close(key)

    def _start(
        self, key: tuple[str, str], label: str, total: int | None, unit: str, initial: int = 0
    ) -> Any:
        self._close(key)
        bar = _tqdm()(
            total=total,
            initial=initial,
            desc=label,
            unit=unit,
            delay=DELAY,
            leave=True,
            file=sys.stderr,
            **_size(sys.stderr),
        )
        self.open[key] = bar
        return bar

    def _close(self, key: tuple[str, str]) -> None:
        bar = self.open.pop(key, None)
        if bar is not None:
            bar.close()


_bar_class: Any = None


def _tqdm() -> Any:
    """tqdm's bar class, loaded when the first bar is drawn: a run that
    draws none never imports it (tests/test_import_time.py)."""
    global _bar_class
    if _bar_class is None:
        with warnings.catch_warnings():
            # tqdm.auto warns, once, in a notebook without ipywidgets: its text bar is fine.
            warnings.simplefilter("ignore")
            from tqdm.auto import tqdm
        _bar_class = tqdm
    return _bar_class


bars = Bars()
events.subscribe(bars.consume, gate=visible)
