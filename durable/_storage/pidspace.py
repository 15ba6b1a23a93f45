"""Whether a lease holder's pid can be judged from here: the one rule for
"this host" of every lease check (`lease`, `objectlease`).

A holder names itself by host name and pid. A pid only means something in
the pid namespace it was read in, on the boot it was read on: two containers
with the host's name (`--network host`, Kubernetes `hostNetwork`), or two
machines cloned with one name, see each other's pids as dead, and would take
a live holder's run over at once and execute its steps a second time. So a
holder also writes its pid space (the kernel's boot id and its pid
namespace), and only a document from the same host name *and* space is
judged by its pid; any other, one written before durable kept the space
included, is another host's, taken over only once it expired (fail closed).

Within one space a pid names a process only while it lives: once it died,
the kernel gives it to the next process started there (pids wrap at
`pid_max`, 32768 on many systems). So a holder also writes when it started
(`process_start`), and a pid found running a process started at another
time is a dead holder's (`holder_running`)."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any


def host_name() -> str:
    """`socket.gethostname()`, which reads the field `os.uname()` does:
    read there, unless the program loaded socket (and may have replaced its
    function, as a test standing for another machine does). socket, which
    nothing else of a run needs, was 4% of the CPU of each process that
    took a lease."""
    if "socket" not in sys.modules and hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


@functools.cache
def pid_space() -> str:
    """This process's boot and pid namespace; "" where the system has
    neither to tell (no /proc: one pid space per host name)."""
    parts = []
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            parts.append(f.read().strip())
    except OSError:
        pass
    try:
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        pass
    return ":".join(parts)


def same_pid_space(doc: dict[str, Any]) -> bool:
    """Whether the holder that wrote doc ran where this process can tell
    whether its pid is alive."""
    return doc.get("host") == host_name() and doc.get("space") == pid_space()


def process_start(pid: int) -> str | None:
    """When process pid started, in clock ticks since boot (the 22nd field
    of /proc/<pid>/stat, which no process can change); None where it cannot
    be read (no /proc: macOS, Windows; the process gone)."""
    fields = proc_stat(pid)
    return fields[19].decode() if len(fields) > 19 else None


def proc_stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat from the third (its state) on; [] where
    unread, or where /proc is not of this process's pid namespace (`_proc_ours`)."""
    if not _proc_ours():
        return []
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            # After the command's name, which may hold spaces and parentheses.
            return f.read().rpartition(b")")[2].split()
    except OSError:
        return []


def _proc_ours() -> bool:
    """Whether /proc numbers processes as this one's pid namespace does. One
    started by `unshare --pid --fork` without `--mount-proc` (a sandbox
    keeping the host's /proc) finds there, under its pid and each peer's,
    the host's process of that number: its start, or a zombie, would make a
    live holder dead. Read once per pid (a forked child reads its own)."""
    pid = os.getpid()
    if pid not in _OURS:
        _OURS.clear()
        try:
            _OURS[pid] = os.readlink("/proc/self") == str(pid)
        except OSError:
            _OURS[pid] = False
    return _OURS[pid]


_OURS: dict[int, bool] = {}


def own_start() -> str | None:
    """`process_start` of this process, read once per pid (a forked child reads its own)."""
    pid = os.getpid()
    if pid not in _STARTS:
        _STARTS.clear()
        _STARTS[pid] = process_start(pid)
    return _STARTS[pid]


_STARTS: dict[int, str | None] = {}


def holder_running(doc: dict[str, Any]) -> bool:
    """Whether the holder doc names (its pid, of this pid space) still runs.
    A pid running a process started at another time than the document says
    is the dead holder's, reused; without both times to compare (a document
    written before durable kept them, a system without /proc) a running pid
    is taken for the holder's: its run waits for its lease to expire rather
    than being taken from a live holder. A zombie (killed, its exit not yet
    collected by its parent) is dead too."""
    pid = int(doc.get("pid", 0))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process runs with that pid
    if doc.get("space") != pid_space():
        return True  # its pid is another space's: no more can be told from here
    fields = proc_stat(pid)
    if fields[:1] in ([b"Z"], [b"X"]):
        return False  # dead, not yet reaped by its parent (a supervisor, a shell)
    started = doc.get("born")  # in ticks since the boot of its space
    return not isinstance(started, str) or len(fields) <= 19 or fields[19].decode() == started


def dead_here(doc: dict[str, Any]) -> int:
    """The pid of the holder an owner document names when it is gone from
    this host (its pools' workers may still be in a try here), else 0."""
    return int(doc.get("pid", 0) or 0) if doc and same_pid_space(doc) and not holder_running(doc) else 0
