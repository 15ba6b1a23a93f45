"""Durability levels: when a local record log is made durable (fdatasync).

- `"fsync"` (the default): every record is on stable storage before the
  operation that wrote it returns. Committers that overlap (threads writing
  to one run's log) share one fdatasync: a committer that finds a sync in
  flight waits for the next one that covers its write (group commit).
- `"batch"`: every record is written at once (a process crash loses
  nothing) and made durable together at most every `sync_interval` seconds
  and at every run end, suspension or failure, and before a run notes its
  records (`noted`): a power loss may lose the last interval, never
  corrupt what is kept (entries are CRC-checked), nor a record noted. A
  record written within the interval is synced when it runs out, by the
  next write or, if none comes first (a long step), by a timer thread.
- `"none"`: never fsync; a power loss may lose any record not yet flushed
  by the operating system. A process crash still loses nothing.

Object stores: each PUT is durable once it returns, whatever the level."""

from __future__ import annotations

import _thread
import contextlib
import heapq
import os
import threading
import time
from collections.abc import Callable

from .._settings import CHOICES, check, setting
from .options import seconds as positive_seconds

LEVELS = CHOICES["durability"]  # one list of the levels: `configure()` and the environment check the same
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


def stronger(*levels: str) -> str:
    """The level among `levels` that syncs most: "fsync", then "batch", then "none"."""
    return min(levels, key=LEVELS.index)


def check_level(level: object, where: str) -> str:
    """`level` in lower case ("Batch" is "batch"), else a ConfigurationError:
    the check `configure()` and $DURABLE_DURABILITY get (`_settings.check`)."""
    return str(check("durability", level, where))


def check_interval(seconds: float | None) -> float:
    if seconds is None:
        return DEFAULT_SYNC_INTERVAL
    return positive_seconds("sync_interval", seconds)


class Syncer:
    """When one open log file is fdatasync'ed, under its level. Offsets are
    bytes of the file: `written` is how far this process has written,
    `synced` how far is known to be on stable storage."""

    def __init__(self, level: str = DEFAULT, interval: float = DEFAULT_SYNC_INTERVAL) -> None:
        self.level, self.interval = level, interval
        self.written = self.synced = 0
        # Taken as `with self._lock` (in C): `with self._cond` would run
        # `Condition.__enter__` and `__exit__` in Python on every commit.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0  # committers waiting in `cover` for a sync to end
        self._busy = False
        # The first sync that failed: no later one is trusted (`SyncFailed`).
        self.failed: OSError | None = None
        self._opened = 0  # bumped by `reset`: a sync begun before covers the old file only
        self._last = time.monotonic()
        self._due_token: object | None = None  # a batch sync due later (`LATER`)
        self._mark_due = 0.0  # when a sync under "fsync" marks again (`marking`)

    def reset(self) -> None:
        """A file opened anew: nothing of it is known to be synced (and a
        forked child has no timer thread)."""
        with self._lock:
            self.written = self.synced = 0
            self._due_token = None
            self._mark_due = 0.0
            # A sync of the old file in flight claims nothing, and waits for nothing, here.
            self._busy, self.failed, self._opened = False, None, self._opened + 1

    def marking(self) -> int | None:
        """What the sync about to be made marks as covered (`syncmark`), or
        None: under "batch" every sync marks; under "fsync" the first one,
        then one a `sync_interval` at most, so that no record pays a system
        call more (a loss of the last interval's records reads as the log's
        end, as before). Called by the one caller syncing (`cover`)."""
        if self.level == "batch":
            return self.written
        if self.level != "fsync" or (now := time.monotonic()) < self._mark_due:
            return None
        self._mark_due = now + self.interval
        return self.written

    def after_write(self, sync: Callable[[], None], end: int, *, held: bool = True) -> None:
        """A committer wrote up to `end`; return once its level is met.
        `held`: a run holds the file open, and its end flushes it. A write
        outside a run (`durable fork` copying records) is synced now under
        "batch" too: the file is closed after it, so a sync due later would
        find nothing to sync, and the process may have exited by then."""
        level = self.level
        if level == "fsync":  # the default, every record: `cover` raises a sync that failed
            self.cover(sync, end)
            return
        if level == "none":
            return
        if self.failed is not None:  # before a batch sync is put off: this write is not durable
            raise SyncFailed.after(self.failed)
        if held and level == "batch" and time.monotonic() - self._last < self.interval:
            if self._arm(sync):
                return
        self.cover(sync, end)

    def flush(self, sync: Callable[[], None]) -> None:
        """A run ends, suspends or fails: everything written becomes durable
        (nothing under "none"), and no timer waits on."""
        self._due_token = None  # what is due is done here
        if self.level != "none":
            self.cover(sync, self.written)

    def _arm(self, sync: Callable[[], None]) -> bool:
        """Sync once the interval runs out, unless a write or the run's end
        does it first: without it, a record followed by a long step would
        wait for the next write, well past the interval. False when no
        sync can be due later (no thread starts): the caller syncs now."""
        with self._lock:
            if self._due_token is not None:
                return True
            self._due_token = token = object()
        if LATER.add(self._last + self.interval, lambda: self._due(sync, token)):
            return True
        with self._lock:
            if self._due_token is token:
                self._due_token = None
        return False

    def _due(self, sync: Callable[[], None], token: object) -> None:
        with self._lock:
            if self._due_token is not token:
                return  # flushed, or the file opened anew, meanwhile
            self._due_token, end = None, self.written
        # A failed sync here is kept (`failed`) and raised by the next
        # commit's or the run end's (`flush`): no later sync is trusted.
        with contextlib.suppress(Exception):
            self.cover(sync, end)

    def cover(self, sync: Callable[[], None], end: int) -> None:
        """Return once bytes up to `end` are synced. One caller syncs at a
        time; the others wait for a sync that started after their write,
        since one in flight may have begun before it. `_busy` is cleared in
        the statement that ends the sync, and by whatever interrupts it (a
        Ctrl-C landing anywhere here): left set, every later commit to the
        log would wait forever."""
        syncing, opened = False, -1
        try:
            with self._lock:
                while self.synced < end and self._busy:
                    self._waiting += 1
                    try:
                        self._cond.wait()
                    finally:
                        self._waiting -= 1
                if self.failed is not None:  # the sync waited for too
                    raise SyncFailed.after(self.failed)
                if self.synced >= end:
                    return
                # Not `end`: one of a write to the file before it was opened anew
                # (a committer outside the log's mutex) is no offset of this one.
                target, opened = self.written, self._opened
                self._busy = syncing = True
            sync()
            with self._lock:
                if self._waiting:  # `notify_all` runs in Python: only when one waits
                    self._cond.notify_all()  # they look once the lock is let go
                if opened == self._opened:  # else the file was opened anew meanwhile
                    if target > self.synced:
                        self.synced = target
                    if self.level == "batch":  # the interval runs from here (`after_write`)
                        self._last = time.monotonic()
                    self._busy = False
                syncing = False
        except BaseException as e:
            if syncing:
                with self._lock:
                    if opened == self._opened:
                        self._busy = False
                    self._cond.notify_all()
            if isinstance(e, OSError) and not isinstance(e, SyncFailed) and opened == self._opened:
                with self._lock:
                    self.failed = self.failed or e
                raise SyncFailed.after(e) from e
            raise


class SyncFailed(OSError):
    """An fdatasync of the log failed, now or before. After one fails, a
    later one may succeed for pages the kernel dropped with the error
    (Linux clears it once reported: "fsyncgate"), so none is trusted again
    on this descriptor: every later write's sync raises this, with the
    first error's errno, and the run that gets it ends (`_core.replay.commit`)."""

    @classmethod
    def after(cls, first: OSError) -> SyncFailed:
        return cls(first.errno, f"{first.strerror or first}; no later sync of this log is trusted")


class _Later:
    """One daemon thread for the process's batch syncs due later (a thread
    per run would cost ~0.1 ms a run). A forked child starts afresh: its
    parent's syncs are not its own."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._count = 0
        self._started = False

    def add(self, at: float, call: Callable[[], None]) -> bool:
        """Call `call` at `at` (time.monotonic); False when no thread can:
        Python 3.12 starts none at interpreter shutdown (a run made by an
        atexit handler), which raised RuntimeError from the record's write."""
        with self._cond:
            if not self._started:
                try:
                    # A bare thread: a Thread started in a workflow body would
                    # be marked with its run (`_core.threads`) and keep it.
                    _thread.start_new_thread(self._loop, ())
                except RuntimeError:
                    return False
                self._started = True
            self._count += 1
            heapq.heappush(self._heap, (at, self._count, call))
            if self._heap[0][1] == self._count:  # sooner than what it waits for
                self._cond.notify()
        return True

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                call = heapq.heappop(self._heap)[2]
            call()


LATER = _Later()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=LATER.forget)
