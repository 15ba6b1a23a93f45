"""A killed holder's process-pool workers against the run's next holder on
this host.

A worker looks before each try whether its workflow process is alive
(`_fanout.orphan`), but the look and the body's start are two moments: a
holder killed (`kill -9`) between them left a worker that started the try
after a resume had taken the run over, beside the resume's own try of the
same item (hunt57 left it, seen under load; hunt58). So a worker holds a
shared lock on the run's gate, a file of this host's, from before that look
until its try has ended (`trying`), and a process that takes the run over
from a holder gone from this host takes the gate's exclusive lock before it
runs anything (`wait_for_tries`): it waits for the tries already past their
look (the ones in flight when the holder died, which the resume makes
again: a kill cuts them short), and a worker that gets the shared lock
after it finds its workflow process gone and exits.

The gate is named by a digest of the lease's identity (its file's real
path, or the object store's URL and the lease's prefix) in a folder of
this user's under the temporary folder: an object store's run has no local
file, and a run folder holds only what the store wrote. POSIX only (a
shared `flock`); where it cannot be made, tries go on as before."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .oslock import KIND

if KIND == "flock":
    import fcntl

# How long a new holder waits for the tries a dead holder's workers make:
# past it, those left run beside the run (they are said).
WAIT = 5.0
_FLAGS = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# gate -> (pid, descriptor, inode): a worker opens a run's gate once, a few runs' at most.
_OPEN: dict[str, tuple[int, int, int]] = {}


def gate_of(lease: Any) -> str | None:
    """The gate of the run whose lease (or `fence.Held`) this is; None where there is none."""
    lease = getattr(lease, "lease", lease)
    path, prefix = getattr(lease, "path", None), getattr(lease, "prefix", None)
    if KIND != "flock":
        return None
    if isinstance(path, str):
        key = f"file\0{os.path.realpath(path)}"
    elif isinstance(prefix, str):
        key = f"{getattr(getattr(lease, 'objects', None), 'url', '')}\0{prefix}"
    else:
        return None
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    return os.path.join(tempfile.gettempdir(), f"durable-{os.getuid()}", f"tries-{name}")


@contextlib.contextmanager
def trying(gate: str | None) -> Iterator[None]:
    """In a worker: the gate's shared lock, held around the look at the
    workflow process and the try (see the module docstring)."""
    fd = _worker_fd(gate) if gate else None
    if fd is None:
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def wait_for_tries(gate: str | None, run: str, holder: object) -> None:
    """Once the run was taken from a holder gone from this host: wait (up to
    `WAIT`) until no worker of its pools is past its look at it."""
    if gate is None:
        return
    try:
        fd = os.open(gate, _FLAGS)
    except OSError:  # none: no worker of this run's ever looked
        return
    try:
        deadline, said = time.monotonic() + WAIT, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if not said:
                said = True
                _log.warning(
                    "run %s: a process-pool worker of its holder that died (pid %s) is making a "
                    "try of one of its items; waiting for it to end (up to %.0f s) before the run "
                    "goes on", run, holder, WAIT,
                )  # fmt: skip
            if time.monotonic() >= deadline:
                _log.warning(
                    "run %s: a try of a pool worker of its dead holder still runs after %.0f s; "
                    "the run goes on beside it (that item runs again here)", run, WAIT,
                )  # fmt: skip
                return
            time.sleep(0.005)  # no signal tells when a lock is let go
        # Every later worker finds its workflow process gone: the gate is done with.
        with contextlib.suppress(OSError):
            os.unlink(gate)
    finally:
        os.close(fd)


def _worker_fd(gate: str) -> int | None:
    """The gate open in this process (created, in a folder only this user
    may write); None where it cannot be."""
    pid = os.getpid()
    held = _OPEN.get(gate)
    if held is not None and held[0] == pid:  # not a descriptor a forked parent opened
        try:  # still the gate: a takeover removes it once done with it (`wait_for_tries`)
            if os.stat(gate).st_ino == held[2]:
                return held[1]
        except OSError:
            pass
    if held is not None or len(_OPEN) >= 8:  # a gate removed, a parent's, or a pool kept over many runs
        for _, fd, _ in _OPEN.values():
            with contextlib.suppress(OSError):  # a parent's copy too: its lock stays its own
                os.close(fd)
        _OPEN.clear()
    folder = os.path.dirname(gate)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None  # another user's, or one others may write in: not trusted
        fd = os.open(gate, _FLAGS | os.O_CREAT, 0o600)
    except OSError:
        return None
    _OPEN[gate] = (pid, fd, os.fstat(fd).st_ino)
    return fd


_log = logging.getLogger("durable")
