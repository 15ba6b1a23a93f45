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
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

from ._errors import LeaseLostError, RunLockedError
from ._oslock import lock_exclusive, unlock

# How many times a contender re-reads after losing a create race before it
# reports the run as locked: every lost race means another process moved.
_ATTEMPTS = 8


class Lease(Protocol):
    def check(self) -> None: ...
    def release(self, *, delete: bool = False) -> None: ...


class _Objects(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def create(self, key: str, data: bytes) -> bool: ...
    def list(self, prefix: str) -> list[str]: ...
    def delete(self, keys: Iterable[str]) -> None: ...


def owner_doc(ttl: float, token: str) -> dict[str, Any]:
    now = time.time()
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "token": token,
        "since": now,
        "expires": now + ttl,
    }


def locked_error(run: str, doc: dict[str, Any]) -> RunLockedError:
    holder = f"pid {doc.get('pid', '?')} on {doc.get('host', '?')}"
    return RunLockedError(run, holder, float(doc.get("since", 0)), float(doc.get("expires", 0)))


class FileLease:
    """An exclusive OS lock on the run's lease file, which holds the owner
    document. The lock is on the file, not the name: the lease file is only
    ever unlinked by its holder, under the lock (`release(delete=True)`), and
    a process that locked a file no longer at the path (it opened it just
    before the unlink) lets it go and tries the path's file again; so two
    processes can never both hold a run. A forked child closes its copy of
    the descriptor (see `_close_in_child`)."""

    def __init__(self, path: str, ttl: float, run: str) -> None:
        self.path, self.run = path, run
        self.lost = False
        self.token = uuid.uuid4().hex
        self.fd: int | None = None
        for _ in range(_ATTEMPTS):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
            if not lock_exclusive(fd, blocking=False):
                doc = _holder_of(fd)
                os.close(fd)
                raise locked_error(run, doc) from None
            if _is_at(fd, path):
                break
            unlock(fd)  # a deleted (or replaced) file: its run was removed meanwhile
            os.close(fd)
        else:
            raise locked_error(run, {})
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner_doc(ttl, self.token)).encode(), 0)
        self.fd = fd
        _NOT_INHERITED[fd] = self

    def check(self) -> None:
        """`LeaseLostError` unless the locked file is still the run's lease
        file: deleted (its run folder removed) or replaced, another process
        may lock the new one."""
        if self.fd is None or self.lost:
            raise LeaseLostError(self.run, why="it was released" if not self.lost else None)
        if not _is_at(self.fd, self.path):
            raise LeaseLostError(self.run, why="its lease file was deleted or replaced")

    def release(self, *, delete: bool = False) -> None:
        """Unlock; with `delete`, first remove the lease file (still locked,
        so whoever opened it meanwhile finds it gone once it gets the lock)."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        _NOT_INHERITED.pop(fd, None)
        if delete and _is_at(fd, self.path):
            with contextlib.suppress(OSError):  # Windows: still open elsewhere; left empty
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        unlock(fd)
        os.close(fd)


def _is_at(fd: int, path: str) -> bool:
    """Whether path still names the file open as fd."""
    mine = os.fstat(fd)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


# A lock belongs to the open file, which fork shares: a pool worker forked
# inside a workflow would keep the run locked after the workflow process
# died (issue 11, item 1). Descriptors registered here are closed in every
# forked child (never unlocked there: that would unlock the parent too) and
# carry O_CLOEXEC for exec'd ones.
_NOT_INHERITED: dict[int, FileLease | None] = {}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def not_inherited(fd: int) -> None:
    """Close fd in a child forked while it is open (until `inherited_no_more`)."""
    _NOT_INHERITED[fd] = None


def inherited_no_more(fd: int) -> None:
    _NOT_INHERITED.pop(fd, None)


def _close_in_child() -> None:
    for fd, lease in list(_NOT_INHERITED.items()):
        with contextlib.suppress(OSError):
            os.close(fd)
        if lease is not None:  # the child does not own the run: it may write nothing
            lease.fd, lease.lost = None, True
    _NOT_INHERITED.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_close_in_child)


class ObjectLease:
    """Generation objects under `prefix` (see the module docstring).

    Why it is safe: the highest generation is never deleted (only keys
    below one's own are, and a release first writes a released-marker
    generation above its own). So after a create-only write of n+1 that
    succeeded, a fresh listing whose highest key is n+1 proves nobody holds
    a later claim; one whose highest key is higher means a recreated,
    long-deleted key and a lost race. Two contenders that read the same n
    race for the same key, and the store lets exactly one create it."""

    def __init__(self, objects: _Objects, prefix: str, ttl: float, run: str) -> None:
        self.objects, self.prefix, self.ttl, self.run = objects, prefix, ttl, run
        self.token = uuid.uuid4().hex
        self.generation = 0
        self.lost = False
        # Until then the lease is surely ours (a third of its life kept in
        # hand for clock drift); after it, `check` renews before trusting it.
        self.fresh_until = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._take()
        self._thread = threading.Thread(target=self._renew_loop, daemon=True, name="durable-lease")
        self._thread.start()

    def _take(self) -> None:
        doc: dict[str, Any] = {}
        for _ in range(_ATTEMPTS):
            gen, doc, older = self._current()
            if gen and not _is_free(doc):
                raise locked_error(self.run, doc)
            if self._claim(gen + 1, older):
                return
        raise locked_error(self.run, doc)

    def _current(self) -> tuple[int, dict[str, Any], list[str]]:
        """(highest generation or 0, its owner document, every key listed)."""
        while True:
            gens = self._generations()
            if not gens:
                return 0, {}, []
            raw = self.objects.get(self._key(gens[-1]))
            if raw is not None:
                return gens[-1], _read_json(raw), [self._key(g) for g in gens]
            # Gone between the listing and the read: its holder moved on to a
            # higher generation, which a new listing shows.

    def _generations(self) -> list[int]:
        return sorted(g for k in self.objects.list(self.prefix) if (g := _gen_of(k)))

    def _claim(self, gen: int, older: list[str], doc: dict[str, Any] | None = None) -> bool:
        started = time.time()
        body = json.dumps(doc or owner_doc(self.ttl, self.token)).encode()
        if not self.objects.create(self._key(gen), body):
            return False
        if self._generations()[-1:] != [gen]:
            return False
        self.generation = gen
        self.fresh_until = started + self.ttl * 2 / 3
        # Older generations no longer decide anything; keep the folder small.
        # A reader about to read one of them just lists again.
        with contextlib.suppress(Exception):
            self.objects.delete(older)
        return True

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    if not self._renew():
                        self.lost = True
                        return
                except Exception:
                    # Retried at the next tick; if the store stays away past
                    # the expiry, that renewal finds out whether it was lost.
                    continue

    def check(self) -> None:
        """`LeaseLostError` once another process may hold the run: taken
        over, or (after a stall: SIGSTOP, a suspended laptop) possibly
        expired and found taken over by a renewal made now."""
        if not self.lost and time.time() >= self.fresh_until:
            with self._lock:
                if not self.lost and not self._stop.is_set() and time.time() >= self.fresh_until:
                    self.lost = not self._renew()
        if self.lost or self._stop.is_set():
            raise LeaseLostError(self.run, why="another process took the run over")

    def _renew(self) -> bool:
        gen, doc, older = self._current()
        if gen != self.generation or doc.get("token") != self.token:
            return False
        return self._claim(gen + 1, older)

    def release(self, *, delete: bool = False) -> None:
        """Write a released marker above our generation; with `delete` (the
        run is being removed), delete every generation instead: a contender
        then finds none and starts again from the first, as for a new run."""
        with self._lock:
            self._stop.set()
            if not self.generation or self.lost:
                return
            with contextlib.suppress(Exception):
                gen, doc, older = self._current()
                if gen == self.generation and doc.get("token") == self.token:
                    if delete:
                        self.objects.delete(older)  # ours, the newest, included
                        return
                    marker = {"released": True, "token": self.token, "since": time.time()}
                    self._claim(gen + 1, older, marker)

    def _key(self, gen: int) -> str:
        return f"{self.prefix}{gen:010d}"


def _holder_of(fd: int) -> dict[str, Any]:
    """The holder's document. It writes it right after taking the lock, so
    a contender that lost by a hair may find the file still empty."""
    for _ in range(50):
        doc = _read_json(os.pread(fd, 4096, 0))
        if doc:
            return doc
        time.sleep(0.01)
    return {}


def _gen_of(key: str) -> int:
    tail = key.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def holder_alive(data: bytes | None, *, renewed: bool) -> bool:
    """Non-blocking probe: does this lease document name a live holder?
    `renewed` leases (object stores) die at their expiry; flock leases are
    never renewed, so only an empty document or a dead local pid frees them."""
    doc = _read_json(data or b"")
    if not doc:
        return False
    if renewed:
        return not _is_free(doc)
    if doc.get("host") == socket.gethostname():
        return _pid_alive(int(doc.get("pid", 0)))
    return True


def object_lease_held(objects: _Objects, prefix: str) -> bool:
    """Non-blocking probe of an ObjectLease: is its newest generation live?"""
    gens = sorted(g for k in objects.list(prefix) if (g := _gen_of(k)))
    return bool(gens) and holder_alive(objects.get(f"{prefix}{gens[-1]:010d}"), renewed=True)


def _is_free(doc: dict[str, Any]) -> bool:
    """Released, expired, unreadable, or held by a dead process on this host."""
    if not doc or doc.get("released") or float(doc.get("expires", 0)) < time.time():
        return True
    if doc.get("host") == socket.gethostname():
        return not _pid_alive(int(doc.get("pid", 0)))
    return False


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_json(data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode() or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}
