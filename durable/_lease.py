"""Run leases: one process at a time executes a run.

Local folders use an exclusive `flock` on the lease file: the kernel drops it
the instant the holder dies, so a re-run right after `kill -9` never waits.
Object stores use a lease object with an expiry, renewed in the background."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Protocol

from ._errors import RunLockedError


class Lease(Protocol):
    def release(self) -> None: ...


class _Objects(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, data: bytes) -> None: ...
    def create(self, key: str, data: bytes) -> bool: ...
    def delete(self, keys: Any) -> None: ...


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


def _run_of(key: str) -> str:
    parts = key.rstrip("/").split("/")
    return parts[-2] if len(parts) >= 2 else key


class FileLease:
    def __init__(self, path: str, ttl: float) -> None:
        self.path = path
        self.token = uuid.uuid4().hex
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            doc = _read_json(os.read(fd, 4096))
            os.close(fd)
            raise locked_error(_run_of(path), doc) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner_doc(ttl, self.token)).encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class ObjectLease:
    def __init__(self, objects: _Objects, key: str, ttl: float) -> None:
        self.objects, self.key, self.ttl = objects, key, ttl
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._take()
        self._thread = threading.Thread(target=self._renew_loop, daemon=True, name="durable-lease")
        self._thread.start()

    def _take(self) -> None:
        mine = json.dumps(owner_doc(self.ttl, self.token)).encode()
        if self.objects.create(self.key, mine):
            return
        doc = _read_json(self.objects.get(self.key) or b"")
        if not _is_dead(doc):
            raise locked_error(_run_of(self.key), doc)
        self.objects.delete([self.key])
        if not self.objects.create(self.key, mine):
            raise locked_error(_run_of(self.key), _read_json(self.objects.get(self.key) or b""))

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            doc = _read_json(self.objects.get(self.key) or b"")
            if doc.get("token") != self.token:
                return
            with contextlib.suppress(OSError):
                self.objects.put(self.key, json.dumps(owner_doc(self.ttl, self.token)).encode())

    def release(self) -> None:
        self._stop.set()
        doc = _read_json(self.objects.get(self.key) or b"")
        if doc.get("token") == self.token:
            self.objects.delete([self.key])


def holder_alive(data: bytes | None, *, renewed: bool) -> bool:
    """Non-blocking probe: does this lease document name a live holder?
    `renewed` leases (object stores) die at their expiry; flock leases are
    never renewed, so only an empty document or a dead local pid frees them."""
    doc = _read_json(data or b"")
    if not doc:
        return False
    if renewed:
        return not _is_dead(doc)
    if doc.get("host") == socket.gethostname():
        return _pid_alive(int(doc.get("pid", 0)))
    return True


def _is_dead(doc: dict[str, Any]) -> bool:
    if not doc or float(doc.get("expires", 0)) < time.time():
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
