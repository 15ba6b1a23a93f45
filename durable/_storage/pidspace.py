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
included, is another host's, taken over only once it expired (fail closed)."""

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
