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
    def release(self) -> None: ...


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
    def __init__(self, path: str, ttl: float, run: str) -> None:
        self.path, self.run = path, run
        self.lost = False
        self.token = uuid.uuid4().hex
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not lock_exclusive(fd, blocking=False):
            doc = _holder_of(fd)
            os.close(fd)
            raise locked_error(run, doc) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner_doc(ttl, self.token)).encode(), 0)
        self.fd: int | None = fd

    def check(self) -> None:
        """`LeaseLostError` unless the locked file is still the run's lease
        file: deleted (its run folder removed) or replaced, another process
        may lock the new one."""
        if self.fd is None or self.lost:
            raise LeaseLostError(self.run, why="it was released" if not self.lost else None)
        mine = os.fstat(self.fd)
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            raise LeaseLostError(self.run, why="its lease file was deleted or replaced")

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            unlock(self.fd)
            os.close(self.fd)
            self.fd = None


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

    def release(self) -> None:
        with self._lock:
            self._stop.set()
            if not self.generation or self.lost:
                return
            with contextlib.suppress(Exception):
                gen, doc, older = self._current()
                if gen == self.generation and doc.get("token") == self.token:
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
