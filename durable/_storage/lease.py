"""Run leases: one process at a time executes a run.

Local folders use an exclusive OS lock on the lease file (`_oslock`): the OS
drops it the instant the holder dies, so a re-run right after `kill -9` never waits.

Object stores (S3, memory, ...) have no locks, only a create-only write
(`If-None-Match: *` on S3). A lease there is a series of generation objects
`<run>/lease/<generation>`; the highest generation is the lease. Taking the
lease, renewing it, taking over a dead one and releasing it are all the same
move: create generation n+1 after reading generation n, then list to check
n+1 is still the highest. Of any number of contenders who read the same n,
the store lets exactly one create n+1; the others re-read and find a live
holder. Nothing depends on a compare-and-swap of one object (If-Match support
varies between S3 providers and emulators), and a stalled holder whose lease
was taken over learns it at its next renewal: its n+1 already exists."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import time
from typing import Any, Protocol

from ..errors import LeaseLostError, RunLockedError
from .inherited import NOT_INHERITED
from .inherited import inherited_no_more as inherited_no_more
from .inherited import not_inherited as not_inherited
from .oslock import lock_exclusive, unlock
from .ownerdoc import owner_doc as owner_doc
from .ownerdoc import owner_json
from .pidspace import dead_here, holder_running, host_name, proc_stat, same_pid_space

# How long a lease lasts unless renewed: every run, fork and cancel takes
# one (object stores renew it as the run goes on; an OS lock needs none).
LEASE_TTL = 30.0

# How many times a contender re-reads after losing a create race before it
# reports the run as locked: every lost race means another process moved.
_ATTEMPTS = 8


class Watching(Exception):
    """A lease of another host looks expired and is being watched before it
    is taken over (`objectlease`): try again in `seconds`."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"an expired lease is watched for {seconds:.1f} s more")
        self.seconds = seconds


class Lease(Protocol):
    def check(self) -> None: ...
    def release(self, *, delete: bool = False) -> None: ...


def locked_error(
    run: str, doc: dict[str, Any], watch: float | None = None, ahead: bool = False
) -> RunLockedError:
    """`watch`: how long after its expiry a lease from another host is taken
    over (object stores), said when the holder is on another host; `ahead`:
    watched from a call's first look, its expiry not waited for (`leasewatch.ahead`)."""
    holder = f"pid {doc.get('pid', '?')} on {doc.get('host', '?')}"
    expires = float(doc.get("expires", 0))
    started = float(doc.get("started", doc.get("since", 0)))  # a lease written before `started`
    error = RunLockedError(run, holder, started, expires)
    if doc.get("pid") == os.getpid() and same_pid_space(doc):
        # Waiting for ourselves would only time out: say who that is.
        error.args = (
            f"{error} That is this very process: another of its threads runs it, or the "
            "workflow was called inside its own run (from one of its steps) with the same "
            "run id, which no wait can free.",
        )
    elif watch is None and same_pid_space(doc) and stopped(int(doc.get("pid", 0))):
        # A lock on local disk lasts as long as its process (an object store's
        # lease, which passes `watch`, is taken over once expired): its lease
        # "expires" at a time long past, and the run looked held for good.
        error.args = (
            f"{error} That process is stopped (Ctrl-Z in its terminal, or SIGSTOP) and "
            f"keeps the run until it goes on: continue it (`fg` there, `kill -CONT "
            f"{doc.get('pid')}`) or end it.",
        )
    elif watch is None and _gone_here(doc):
        # A local lock outliving its holder: a process forked from it has it (`_lock`).
        error.args = (
            f"{error} That process has ended, but a process it started (forked) still has the "
            "run's lease file open, which keeps its lock: end that process (`fuser -v` on the "
            "run's lease file names it).",
        )
    elif watch is not None and not same_pid_space(doc):
        # From here a dead holder looks the same as a live one until then;
        # without this, a team mate's crashed run reads as running forever.
        need = math.ceil(watch if ahead else max(0.0, expires - time.time()) + watch)
        when = (
            f"once its lease, written by a clock ahead of ours, stays unrenewed for "
            f"{math.ceil(watch)} s (its expiry is not waited for)"
            if ahead
            else f"once its lease has expired and stayed unrenewed for {math.ceil(watch)} s more"
        )
        error.args = (
            f"{error} If that process is gone (killed, or its machine down), a process on "
            f"another host takes the run over {when}: a wait of {need} s or more does it.",
        )
    return error


def told_watching(run: str, doc: dict[str, Any], watch: float) -> None:
    """A wait of many seconds (23 for the default lease) said, once per watch:
    silent, it looked like a hang."""
    expires = float(doc.get("expires", 0))
    expired = time.strftime("%H:%M:%S", time.localtime(expires))
    if expires > time.time():  # written by a clock ahead of ours (`leasewatch.takeable`)
        expired = f"was written by a clock ahead of ours (it expires at {expired} by ours)"
    else:
        expired = f"expired at {expired} without being released"
    logging.getLogger("durable").warning(
        "run %s: its lease, held by pid %s on %s, %s; "
        "taking the run over once it stays unrenewed for %.1f s more (that host's clock "
        "may differ from ours, and a live holder renews within that time)",
        run, doc.get("pid", "?"), doc.get("host", "?"), expired, watch,
    )  # fmt: skip


class FileLease:
    """An exclusive OS lock on the run's lease file, which holds the owner
    document. The lock is on the file, not the name: the lease file is only
    ever unlinked by its holder, under the lock (`release(delete=True)`), and
    a process that locked a file no longer at the path (it opened it just
    before the unlink) lets it go and tries the path's file again; so two
    processes can never both hold a run. A forked child closes its copy of
    the descriptor (see `inherited`)."""

    def __init__(self, path: str, ttl: float, run: str) -> None:
        self.path, self.run = path, run
        # What `os.stat` makes of path on each check, made once: the same file named.
        self._stat_path = os.fsencode(path)
        self.lost = False
        self.dead_here = 0  # the holder it was taken from, gone from this host (`triesgate`)
        self.token = os.urandom(16).hex()  # 128 random bits, as `uuid4().hex` spells 122, at a fifth of its cost
        self.fd: int | None = None
        self._file: io.FileIO | None = None
        # (st_dev, st_ino) of the locked file: an open file's identity never
        # changes, so each check stats only the path (one syscall a check).
        self.ident: tuple[int, int] = (0, 0)
        for _ in range(_ATTEMPTS):
            # A FileIO, not a bare descriptor: its close is one C call that
            # marks it closed, so a release cut short and run again
            # (`fence.reclaim`) never closes a descriptor number twice.
            file = io.FileIO(path, "r+", opener=_open_lease)
            fd = file.fileno()
            try:
                holder = _lock(fd)
                if holder is not None:
                    raise locked_error(run, holder) from None
                st = os.fstat(fd)
                ident = _ident(st)
                if _is_at(ident, path):
                    if st.st_size:  # the document of a holder that died: the new one may be shorter
                        self.dead_here = dead_here(_read_json(os.pread(fd, 4096, 0)))
                        os.ftruncate(fd, 0)
                    os.pwrite(fd, owner_json(ttl, self.token), 0)
                    self.fd, self._file, self.ident = fd, file, ident
                    NOT_INHERITED[fd] = self
                    return
            except BaseException:
                # Closing drops the lock: a Ctrl-C landing here must not leave
                # this process holding the run with no lease object to free it.
                file.close()
                raise
            unlock(fd)  # a deleted (or replaced) file: its run was removed meanwhile
            file.close()
        raise locked_error(run, {})

    def check(self) -> None:
        """`LeaseLostError` unless the locked file is still the run's lease
        file: deleted (its run folder removed) or replaced, another process
        may lock the new one."""
        if self.fd is None or self.lost:
            raise LeaseLostError(self.run, why="it was released" if not self.lost else None)
        try:  # `_is_at`, inline: twice a recorded step
            st = os.stat(self._stat_path)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != self.ident[1] or st.st_dev != self.ident[0]:
            raise LeaseLostError(self.run, why="its lease file was deleted or replaced")

    def release(self, *, delete: bool = False) -> None:
        """Unlock; with `delete`, first remove the lease file (still locked,
        so whoever opened it meanwhile finds it gone once it gets the lock).
        Re-runnable until the file is closed (see `fence.Held`)."""
        file = self._file
        if file is None or file.closed:
            return
        try:
            if delete and self.fd is not None and _is_at(self.ident, self.path):
                with contextlib.suppress(OSError):  # Windows: still open elsewhere; left empty
                    os.unlink(self.path)
            with contextlib.suppress(OSError, ValueError):
                os.ftruncate(file.fileno(), 0)
        finally:  # whatever lands meanwhile (Ctrl-C), the lock goes
            self._drop(file)

    def _drop(self, file: io.FileIO) -> None:
        self.fd = None  # from here on no check passes
        if file.closed:
            return
        NOT_INHERITED.pop(file.fileno(), None)  # before the number is free for reuse
        try:  # the close drops the lock too: a failed unlock (EIO) must not lose a run's outcome
            with contextlib.suppress(OSError):
                unlock(file.fileno())
        finally:
            file.close()


# How long a lock whose holder is gone is waited for: a process it forked
# keeps a copy of the lease file, and of its lock, until its at-fork handler
# closes it (`inherited`), once the kernel schedules it.
FORKED_WAIT = 2.0


def _lock(fd: int) -> dict[str, Any] | None:
    """Lock fd's file: None once locked, else the document of the holder
    that has it. The lock belongs to the open file, which a fork shares: a
    holder killed just after it forked a pool's worker left it with that
    worker until the worker closed its copy, and a resume right then was
    refused, naming the dead holder (hunt57). Such a lock is waited for."""
    deadline = time.monotonic() + FORKED_WAIT
    while not lock_exclusive(fd, blocking=False):
        doc = _holder_of(fd)
        if not _gone_here(doc) or time.monotonic() >= deadline:
            return doc
        time.sleep(0.005)  # no signal tells when a lock is let go but taking it
    return None


def _open_lease(path: str, flags: int) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, FILE_MODE)


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _is_at(ident: tuple[int, int], path: str | bytes) -> bool:
    """Whether path still names the file whose identity is ident."""
    try:
        st = os.stat(path)  # `_ident` inline (and this whole check in `FileLease.check`)
    except FileNotFoundError:
        return False
    return st.st_ino == ident[1] and st.st_dev == ident[0]


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# The mode every file of a local store is made with, before the process's
# umask, as open() makes one: a group that shares a store under umask 007
# also resumes its members' runs, which takes the lease and appends to the
# log (0644 made them 0640 there: Permission denied on the other's resume).
FILE_MODE = 0o666
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _holder_of(fd: int) -> dict[str, Any]:
    """The holder's document. It writes it right after taking the lock, so
    a contender that lost by a hair may find the file still empty."""
    for _ in range(50):
        doc = _read_json(os.pread(fd, 4096, 0))
        if doc:
            return doc
        time.sleep(0.01)
    return {}


def holder_alive(data: bytes | None, *, renewed: bool) -> bool:
    """Non-blocking probe: does this lease document name a live holder?
    `renewed` leases (object stores) die at their expiry; flock leases are
    never renewed, so only an empty document or a dead local pid frees them."""
    doc = _read_json(data or b"")
    if not doc:
        return False
    if renewed:
        return not _is_free(doc)
    # The lock decides who may run (a starter is never turned away on this
    # answer): a listing judges any holder of this host name by its pid.
    if doc.get("host") == host_name():
        return holder_running(doc)
    return True


def object_lease_held(objects: Any, prefix: str) -> bool:
    """Non-blocking probe of an `ObjectLease`: is its newest generation live?"""
    gens = sorted(g for k in objects.list(prefix) if (g := _gen_of(k)))
    return bool(gens) and holder_alive(objects.get(f"{prefix}{gens[-1]:010d}"), renewed=True)


def _gen_of(key: str) -> int:
    """The generation an `ObjectLease` key names (0: none)."""
    return int(tail) if (tail := key.rsplit("/", 1)[-1]).isdigit() else 0


def _is_free(doc: dict[str, Any]) -> bool:
    """Released, expired, unreadable, or held by a dead process on this host."""
    if not doc or doc.get("released") or float(doc.get("expires", 0)) < time.time():
        return True
    if same_pid_space(doc):
        return not holder_running(doc)
    return False


def _gone_here(doc: dict[str, Any]) -> bool:
    """Whether the document names a process of this pid space that is gone."""
    return same_pid_space(doc) and not holder_running(doc)


def stopped(pid: int) -> bool:
    """Whether the process is stopped (Ctrl-Z, SIGSTOP, a debugger): its
    state in /proc (Linux; False elsewhere)."""
    return proc_stat(pid)[:1] in ([b"T"], [b"t"])


def _read_json(data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode() or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}
