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
after it finds its workflow process gone and exits. A try still running
after `WAIT` (a long item, a worker stopped) is killed (SIGKILL, the
workers named by the kernel's table of locks) as the holder's kill would
have, had its pool died with it: left, it ran beside the resume's try of
the same item (hunt59). A holder alive on this host, stopped past its lease
on an object store (SIGSTOP, a suspended machine) and taken over, is waited
for alike: its workers go on while it is stopped, and their tries in flight
ran beside the taker's (hunt60); the ones queued start no more (`lapsed`).

The run's holder removes the gate once it lets the run go (`done_with`),
if no worker is in a try: a worker that gets its shared lock on a gate
removed meanwhile takes it again on the gate now at that name, so a
takeover never waits on a file the workers no longer use.

The gate is named by a digest of the lease's identity (its file's real
path, or the object store's URL and the lease's prefix) and of the pid of
the holder whose workers lock it, in a folder of this user's under the
temporary folder: an object store's run has no local file, and a run
folder holds only what the store wrote; a takeover waits for, and kills,
only the workers of the holder it took the run from, never those of
another store's run spelt alike. POSIX only (a
shared `flock`); where it cannot be made, tries go on as before."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
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
# The gates this process's pools handed to their workers (`handed`): removed
# when the run is let go (`done_with`); every other run has none to remove.
_HANDED: set[str] = set()


def gate_of(lease: Any, owner: int = 0) -> str | None:
    """The gate of the run whose lease (or `fence.Held`) this is, for the
    workers of the process `owner` (this one by default); None where there is none."""
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
    name = hashlib.sha256(f"{key}\0{owner or os.getpid()}".encode()).hexdigest()[:32]
    return os.path.join(tempfile.gettempdir(), f"durable-{os.getuid()}", f"tries-{name}")


@contextlib.contextmanager
def trying(gate: str | None) -> Iterator[None]:
    """In a worker: the gate's shared lock, held around the look at the
    workflow process and the try (see the module docstring)."""
    fd = _locked(gate) if gate else None
    try:
        yield
    finally:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _locked(gate: str) -> int | None:
    """The gate's descriptor, its shared lock taken on the file now at its
    name (the one a takeover opens); None where there is no gate."""
    for _ in range(8):  # a gate removed each time (a run let go and taken again): bounded
        fd = _worker_fd(gate)
        if fd is None:
            return None
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _current(gate, fd):
            return fd
        fcntl.flock(fd, fcntl.LOCK_UN)
    return None


def handed(gate: str | None) -> str | None:
    """`gate`, handed to a pool's workers by this process: `done_with` removes it."""
    if gate is not None:
        _HANDED.add(gate)
    return gate


def done_with(lease: Any) -> None:
    """As the run's holder lets it go: remove the gate its pools handed out,
    unless a worker is in a try of it (a pool the run left running)."""
    if not _HANDED:  # no process pool ran here: nothing to compute
        return
    gate = gate_of(lease)
    if gate is None or gate not in _HANDED:
        return
    _HANDED.discard(gate)
    try:
        fd = os.open(gate, _FLAGS)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(gate)  # under the lock: a worker waiting for it takes the next gate (`trying`)
    except OSError:
        pass
    finally:
        os.close(fd)


def wait_for_tries(gate: str | None, run: str, holder: object, stopped: bool = False) -> None:
    """Once the run was taken from a holder gone from this host (`stopped`:
    alive, stalled past its lease): wait (up to `WAIT`) until no worker of
    its pools is past its look at it, then kill the ones still in a try and
    wait for them to be gone."""
    if gate is None:
        return
    try:
        fd = os.open(gate, _FLAGS)
    except OSError:  # none: no worker of this run's ever looked
        return
    try:
        if not _idle(fd):
            whose = f"its holder {'stopped past its lease' if stopped else 'that died'} (pid {holder})"
            _log.warning(
                "run %s: a process-pool worker of %s is making a try of one of its items; "
                "waiting for it to end (up to %.0f s) before the run goes on", run, whose, WAIT,
            )  # fmt: skip
            if not _idle(fd, time.monotonic() + WAIT) and not (
                _kill_tries(fd, run, whose) and _idle(fd, time.monotonic() + WAIT)
            ):
                _log.warning(
                    "run %s: a try of a pool worker of %s still runs after %.0f s and could not "
                    "be stopped; the run goes on beside it (that item runs again here)", run, whose, WAIT,
                )  # fmt: skip
                return
        # Every later worker finds its workflow process gone: the gate is done with.
        with contextlib.suppress(OSError):
            os.unlink(gate)
    finally:
        os.close(fd)


def _idle(fd: int, until: float = 0.0) -> bool:
    """Whether the gate's exclusive lock was taken (no try in it) by `until`
    (at once when 0); polled: no signal tells when a lock is let go."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= until:
                return False
        time.sleep(0.005)


def _kill_tries(fd: int, run: str, whose: str) -> list[int]:
    """Kill (SIGKILL) the workers holding the gate open as `fd` with a lock
    (its shared lock: in a try of the holder's, dead or stopped); the pids killed. Each is
    named by the kernel's table of locks (Linux), found holding this very
    file open, and killed through a pidfd opened before that look: never a
    pid given to another process since. Elsewhere none is killed."""
    st = os.fstat(fd)
    killed = []
    for pid in sorted(_lockers(st.st_ino) - {os.getpid()}):
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # gone already, or no pidfd here
            continue
        try:
            if _holds(pid, st):  # after the pidfd: that very process has it open
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                killed.append(pid)
        except OSError:
            pass
        finally:
            os.close(pidfd)
    if killed:
        _log.warning(
            "run %s: killed the pool worker(s) %s of %s, still in a try after %.0f s: "
            "left, each ran beside the run's own try of that item (the resume makes it)",
            run, ", ".join(map(str, killed)), whose, WAIT,
        )  # fmt: skip
    return killed


def _lockers(inode: int) -> set[int]:
    """The pids holding a `flock` on a file of inode number `inode`, of any
    device (/proc/locks names the device under an overlay or a btrfs
    subvolume otherwise than `stat` does: `_holds` tells the file); none
    where that table is not."""
    try:
        with open("/proc/locks") as table:
            rows = [line.split() for line in table]
    except OSError:
        return set()
    at = f":{inode}"
    return {
        int(f[4])
        for f in rows
        if len(f) > 5 and f[1] == "FLOCK" and f[5].endswith(at) and f[4].isdigit()
    }


def _holds(pid: int, st: os.stat_result) -> bool:
    """Whether process `pid` has the file `st` describes open."""
    where = f"/proc/{pid}/fd"
    for name in os.listdir(where):
        with contextlib.suppress(OSError):
            seen = os.stat(f"{where}/{name}")
            if (seen.st_dev, seen.st_ino) == (st.st_dev, st.st_ino):
                return True
    return False


def _current(gate: str, fd: int) -> bool:
    """Whether `fd` is still the gate at its name (not one removed since it was opened)."""
    try:
        return os.stat(gate).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


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
