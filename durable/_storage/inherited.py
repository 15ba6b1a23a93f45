"""What a process forked from a lease holder inherits of its leases:
nothing. A child (a pool worker forked in a workflow, a step's `os.fork()`
whose child returns instead of `os._exit`) shares its parent's memory and
descriptors, never its run: it may write nothing of it.

A local lease's lock belongs to the open file, which fork shares: a pool
worker forked inside a workflow would keep the run locked after the
workflow process died (issue 11, item 1). Descriptors registered here are
closed in every forked child (never unlocked there: that would unlock the
parent too) and carry O_CLOEXEC for exec'd ones.

An object store's lease (`objectlease.ObjectLease`) is its token and a
thread renewing it, which fork leaves behind: the child kept the token,
renewed the lease in its parent's name once its copy was no longer fresh,
recorded steps beside it, and released the lease its parent still ran
under. Each is lost in the child, as a local lease is."""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any

# fd -> the FileLease locking it, or None for a descriptor of another lock (a log's).
NOT_INHERITED: dict[int, Any] = {}
# The object leases this process holds (`ObjectLease.__init__`).
OBJECT_LEASES: weakref.WeakSet[Any] = weakref.WeakSet()
FORKED = "this process was forked from the one holding the run, which goes on holding it"


def not_inherited(fd: int) -> None:
    """Close fd in a child forked while it is open (until `inherited_no_more`)."""
    NOT_INHERITED[fd] = None


def inherited_no_more(fd: int) -> None:
    NOT_INHERITED.pop(fd, None)


def _in_child() -> None:
    for fd, lease in list(NOT_INHERITED.items()):
        with contextlib.suppress(OSError):
            if lease is not None and lease._file is not None:
                lease._file.close()  # the child's copy: the parent keeps its lock
            else:
                os.close(fd)
        if lease is not None:  # the child does not own the run: it may write nothing
            lease.fd, lease.lost = None, True
    NOT_INHERITED.clear()
    for held in list(OBJECT_LEASES):  # nor renews, records or releases its parent's
        # A fresh lock: the parent's renewal thread, gone here, may have held the old one.
        held.lost, held.why, held._lock = True, FORKED, threading.Lock()
    OBJECT_LEASES.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_in_child)
