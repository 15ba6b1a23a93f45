"""A run's operation records on local disk as one append-only log.

One file per record costs a file creation, a rename and two fsyncs per step;
appending to one log costs a write and (under the default durability level)
one fdatasync, and a resume reads one file instead of thousands. Each entry is framed and CRC-checked; the record
inside is sealed as everywhere else. Only the process holding the run's lease
appends, so entries never interleave. Entries are framed as `logentry` describes."""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable

from .durability import Syncer
from .keys import Position
from .lease import inherited_no_more, not_inherited
from .logentry import data_at, data_offset, encode_entry, frame_entry, locate, read_at, shrunk, span
from .logfile import CLOEXEC, NOFOLLOW, cut, fsync_dir, lock, open_for_append, release, write_all
from .logindex import by_position, compact, expand, no_steps, span_of
from .oslock import EX, UN, flock, unlock
from .syncmark import marked, sync_marked

__all__ = ["LOG_NAME", "NOFOLLOW", "UNOPENED", "RunLog", "fsync_dir", "process_id"]

LOG_NAME = "records.log"


class RunLog:
    """Appends to one run's log and keeps its index, so create-only is O(1).

    Every append, and the cut of a torn tail, happens under an exclusive
    flock on the log itself, after the index has caught up with whatever
    another writer (another store object, another process) appended since:
    the first record at a name wins here exactly as on an object store.
    While a run holds it (`hold`), the file stays open and is synced under
    the run's durability level (`durability.Syncer`); otherwise each write
    opens, syncs and closes it."""

    def __init__(self, path: str, run_id: str) -> None:
        self.path, self.run_id = path, run_id
        # name -> where its record lies in the file (`logentry.span`): the
        # records themselves are the caller's, kept once, read back when asked.
        self.records: dict[str, int] | None = None
        # A resume's body steps, by position (`logindex`): asked after records.
        self.steps = no_steps()
        self.size = 0  # bytes of the log the index covers
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino) of that log
        self.syncer, self.held = Syncer(), False
        self._fd: int | None = None
        self._pid = 0  # the process that opened _fd: a forked child opens its own
        self._mutex = threading.Lock()  # threads share _fd, and so its flock
        # The writer's lease check (`LogRecords`), made again under the flock
        # of a log other than the one it was made for (`moved`: `_append`).
        self.fence: Callable[[], None] = _unfenced
        self.moved = False

    def load(self, steps: dict[Position, bytes] | None = None,
             unsynced: int | None = None) -> dict[str, bytes]:  # fmt: skip
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW | CLOEXEC)
        except FileNotFoundError:
            self.records, self.size, self.ident, self.steps = {}, 0, None, no_steps()
            return {}
        try:
            lock(fd)
            self.records = None  # read it all again: the caller wants the log as it is
            found: dict[int, int] = {}  # the body steps' spans, by position (`locate`)
            blob = self._catch_up(fd, found=found, unsynced=unsynced)
        finally:
            release(fd)
        assert self.records is not None
        self.records, self.steps = compact(self.records, found)
        if steps is not None:  # a resume's: its body steps by position, the rest by name
            index = by_position(blob, self.steps, steps, self.records)
        else:  # every record by name
            expand(index := dict(self.records), self.steps)
        return {name: data_at(blob, at) for name, at in index.items()}

    def create(self, name: str, data: bytes) -> bytes | None:
        """Append name unless the log has it; return what is there if so."""
        if self.held:  # a run's record: the file is open already, most likely
            found = self.create_open(name, data)
            if found is not UNOPENED:
                return found
        return self._write([(name, data)], create=True)

    def create_open(self, name: str, data: bytes) -> bytes | Unopened | None:
        """`create` through the file a run holds open, with nothing else to
        do (`_append` of one record): `UNOPENED` when the file is not open
        in this process or was deleted under it (`create` then opens the
        file at the path)."""
        syncer = self.syncer
        with self._mutex:
            fd = self._fd
            if fd is None or self._pid != pid:
                return UNOPENED
            flock(fd, EX)  # `oslock.lock_wait`, without a Python call on POSIX
            try:
                index, existing = self._caught_up(fd, name)
                if existing is not None:
                    return existing
                write_all(fd, entry := frame_entry(name, data))  # a large one: head, data apart
                size = len(data)
                end = self.size + (len(entry) if isinstance(entry, bytes) else len(entry[0]) + size)
                index[name] = (end - size) << 32 | size  # `span`, without a call
                self.size = end
                if end > syncer.written:
                    syncer.written = end
            except _Unlinked:
                self.moved = True
                return UNOPENED
            finally:
                try:
                    flock(fd, UN)
                except OSError:
                    pass
        if syncer.level != "none":  # outside the mutex: a shared sync
            syncer.after_write(self._sync, end)
        return None

    def append(self, items: list[tuple[str, bytes | None]]) -> None:
        self._write(items, create=False)

    def is_open(self) -> bool:
        """Whether this process has the file open (a run holds it)."""
        return self._fd is not None and self._pid == pid

    def hold(self, level: str, interval: float) -> None:
        """A run starts: keep the file open, sync it under `level`."""
        self.syncer.level, self.syncer.interval, self.held = level, interval, True

    def sync_file(self) -> int:
        """What the file holds, durable now, whoever wrote it: its size."""
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW | CLOEXEC)
        except FileNotFoundError:  # a new run: nothing to sync
            return 0
        try:
            size = os.fstat(fd).st_size  # the sync covers this much at least
            os.fdatasync(fd)
            return size
        finally:
            os.close(fd)

    def release(self) -> int | None:
        """A run ends (completed, suspended, failed): make what it wrote
        durable under its level, and close the file: its bytes durable now
        (None under "none")."""
        with self._mutex:
            self.held = False
            if self._fd is not None and self._pid == pid:
                try:
                    size = os.fstat(self._fd).st_size  # all written: the run's steps are done
                    self.syncer.flush(self._sync)
                    return size if self.syncer.level != "none" else None
                finally:
                    self._close()
        return None

    def _write(self, items: list[tuple[str, bytes | None]], *, create: bool) -> bytes | None:
        with self._mutex:
            if self.moved:  # before a removed run's folder is made again (`_append`)
                self.fence()
            fd, fresh = self._open()
            try:
                try:
                    existing = self._append(fd, items, create=create)
                except _Unlinked:  # a restarted or removed run: write to the new file
                    self.moved = True
                    self._close()
                    self.fence()
                    fd, fresh = self._open()
                    existing = self._append(fd, items, create=create)
                if fresh and self.syncer.level != "none":  # its name must survive a crash too
                    fsync_dir(os.path.dirname(self.path))
                if not self.held:
                    self.syncer.after_write(self._sync, self.size, held=False)
            finally:
                if not self.held:
                    self._close()
            end = self.size
        if self.held:  # outside the mutex: overlapping committers share a sync
            self.syncer.after_write(self._sync, end)
        return existing

    def _append(
        self, fd: int, items: list[tuple[str, bytes | None]], *, create: bool
    ) -> bytes | None:
        """`moved`: the log open before was deleted under this writer, whose
        lease check came before (a run folder removed by hand takes the
        lease file with it, and another process may start the run afresh
        there): checked again, under the flock of the log at the path now,
        or a record of the removed run lands there, its folder remade."""
        lock(fd, register=False)
        try:
            if self.moved:
                self.fence()
                self.moved = False
            index, existing = self._caught_up(fd, items[0][0] if create else None)
            if existing is not None:
                return existing
            if self.steps and not create:  # deletions and replacements: by name only
                self.steps = expand(index, self.steps)
            frames = [encode_entry(name, data) for name, data in items]
            write_all(fd, frames[0] if len(frames) == 1 else b"".join(frames))
            start = self.size
            for (name, data), entry in zip(items, frames, strict=True):
                if data is None:
                    index.pop(name, None)
                else:
                    index[name] = span(start + data_offset(name), len(data))
                start += len(entry)
            self.size = start
            self.syncer.written = max(self.syncer.written, start)
        finally:
            try:  # `contextlib.suppress` costs more than the unlock
                unlock(fd)
            except OSError:
                pass
        return None

    def _caught_up(self, fd: int, name: str | None) -> tuple[dict[str, int], bytes | None]:
        """Under the flock, before an append: the index, caught up with the file,
        and what the log holds at `name` already (create-only). One fstat serves
        both: whether the file was deleted under the open descriptor (so that no
        write lands in a dead file), and how far the index must catch up."""
        st = os.fstat(fd)
        if st.st_nlink == 0:
            raise _Unlinked(f"{self.path} was deleted while open")
        index, ident = self.records, self.ident
        # Nothing to catch up with (`_catch_up` would find so): the usual case, told
        # field by field (no tuple made for the comparison on every append).
        same = ident is not None and st.st_ino == ident[1] and st.st_dev == ident[0]
        if index is None or st.st_size != self.size or not same:
            self._catch_up(fd, st)
            index = self.records
            assert index is not None
        at = index.get(name) if name is not None else None
        if at is None and self.steps and name is not None:  # a resumed run's new record
            at = span_of(self.steps, name)
        if at is None:
            return index, None
        return index, read_at(fd, at >> 32, (at >> 32) + (at & 0xFFFFFFFF))

    def _open(self) -> tuple[int, bool]:
        """The open log (fd, whether this call created the file): opened
        again in a forked child (and by `_write` when `_append` found the
        file deleted under it)."""
        if self._fd is not None and self._pid == pid:
            return self._fd, False  # `is_open`
        fd, fresh = open_for_append(self.path)
        not_inherited(fd)  # a child forked while it is open must not share its lock
        self._fd, self._pid = fd, pid
        self.syncer.reset()
        return fd, fresh

    def _sync(self) -> None:
        assert self._fd is not None
        sync_marked(self._fd, self.syncer.marking())

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            inherited_no_more(fd)
            os.close(fd)

    def _catch_up(self, fd: int, st: os.stat_result | None = None,
                  found: dict[int, int] | None = None, unsynced: int | None = None) -> bytes:
        """Bring the index up to the log's end (under the flock): read only
        what was appended since, or all of it when the file is another one
        (the same one, shorter: refused); a torn tail (a writer died
        mid-append) is cut off. The bytes read. `st`: its fstat, taken
        under the flock. `found` (a whole read, `load`): the body steps'
        spans go there (`locate`), and damage past `unsynced` is cut off too."""
        st = os.fstat(fd) if st is None else st
        ident = (st.st_dev, st.st_ino)
        # Written through fd (`syncer.written`, 0 once opened): this very file, cut by another.
        if self.syncer.written and st.st_size < self.size and self.records is not None:
            raise shrunk(self.run_id, self.path, self.size, st.st_size)
        if self.records is None or ident != self.ident or st.st_size < self.size:
            self.records, self.size, self.ident, self.steps = {}, 0, ident, no_steps()
        if st.st_size <= self.size:
            return b""
        if self.steps:  # another writer's entries may delete: applied by name
            self.steps = expand(self.records, self.steps)
        try:
            tail = read_at(fd, self.size, st.st_size)
            intact = locate(tail, self.run_id, self.records, self.size, self.path, found, unsynced)
        except BaseException:
            self.records = None  # half applied: read it all again next time
            raise
        self.size += intact
        if self.size < st.st_size and self.size >= marked(self.path):  # never synced bytes
            cut(fd, self.path, self.size)  # (the reader refuses them: `logcut.short_of`)
        return tail


# This process's id, by a fork hook (`os.getpid` is a system call): read every append.
pid = os.getpid()


def _forked() -> None:
    global pid
    pid = os.getpid()


def process_id() -> int:
    """`os.getpid()` without the system call (kept by the fork hook)."""
    return pid


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forked)


def _unfenced() -> None:
    """No lease to check: a log written outside a run."""


class _Unlinked(OSError):
    """The open log file was deleted (its run restarted or removed)."""


class Unopened(enum.Enum):
    UNOPENED = "the log is not open here"


UNOPENED = Unopened.UNOPENED
