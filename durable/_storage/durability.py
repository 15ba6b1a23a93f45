"""Durability levels: when a local record log is made durable (fdatasync).

- `"fsync"` (the default): every record is on stable storage before the
  operation that wrote it returns. Committers that overlap (threads writing
  to one run's log) share one fdatasync: a committer that finds a sync in
  flight waits for the next one that covers its write (group commit).
- `"batch"`: every record is written at once (a process crash loses
  nothing) and made durable together at most every `sync_interval` seconds
  and at every run end, suspension or failure: a power loss may lose the
  last interval, never corrupt what is kept (entries are CRC-checked).
- `"none"`: never fsync; a power loss may lose any record not yet flushed
  by the operating system. A process crash still loses nothing.

Object stores: each PUT is durable once it returns, whatever the level."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .._settings import setting
from ..errors import ConfigurationError

LEVELS = ("fsync", "batch", "none")
DEFAULT = "fsync"
DEFAULT_SYNC_INTERVAL = 1.0


def resolve_durability(*given: str | None) -> str:
    """THE resolution of a durability level: the first one given (a
    workflow's option, then its store's), else `durable.configure()`'s,
    else `$DURABLE_DURABILITY`, else `"fsync"` (`_settings.setting`). Every
    level is checked, wherever it came from."""
    for level in given:
        if level is not None:
            return check_level(level, "durability")
    return str(setting("durability"))


def check_level(level: object, where: str) -> str:
    if level not in LEVELS:
        raise ConfigurationError(
            f"{where}={level!r} is not a durability level: use one of "
            f"{', '.join(repr(v) for v in LEVELS)} (see docs/storage.md, durability levels)"
        )
    return str(level)


def check_interval(seconds: float | None) -> float:
    if seconds is None:
        return DEFAULT_SYNC_INTERVAL
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
        raise ConfigurationError(
            f"sync_interval must be a positive number of seconds, not {seconds!r}"
        )
    return float(seconds)


class Syncer:
    """When one open log file is fdatasync'ed, under its level. Offsets are
    bytes of the file: `written` is how far this process has written,
    `synced` how far is known to be on stable storage."""

    def __init__(self, level: str = DEFAULT, interval: float = DEFAULT_SYNC_INTERVAL) -> None:
        self.level, self.interval = level, interval
        self.written = self.synced = 0
        self._cond = threading.Condition()
        self._busy = False
        self._last = time.monotonic()

    def reset(self) -> None:
        """A file opened anew: nothing of it is known to be synced."""
        with self._cond:
            self.written = self.synced = 0

    def after_write(self, sync: Callable[[], None], end: int) -> None:
        """A committer wrote up to `end`; return once its level is met."""
        if self.level == "none":
            return
        if self.level == "batch" and time.monotonic() - self._last < self.interval:
            return
        self.cover(sync, end)

    def flush(self, sync: Callable[[], None]) -> None:
        """A run ends, suspends or fails: everything written becomes durable
        (nothing under "none")."""
        if self.level != "none":
            self.cover(sync, self.written)

    def cover(self, sync: Callable[[], None], end: int) -> None:
        """Return once bytes up to `end` are synced. One caller syncs at a
        time; the others wait for a sync that started after their write,
        since one in flight may have begun before it. `_busy` is cleared in
        the statement that ends the sync, and by whatever interrupts it (a
        Ctrl-C landing anywhere here): left set, every later commit to the
        log would wait forever."""
        syncing = False
        try:
            with self._cond:
                while self.synced < end and self._busy:
                    self._cond.wait()
                if self.synced >= end:
                    return
                target = max(self.written, end)
                self._busy = syncing = True
            sync()
            with self._cond:
                self._cond.notify_all()  # the waiters look once the lock is let go
                self.synced, self._last = max(self.synced, target), time.monotonic()
                self._busy = syncing = False
        except BaseException:
            if syncing:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            raise
