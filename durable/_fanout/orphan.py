"""Whether a process pool's worker still works for a live workflow process.

A worker outlives a workflow process killed with `kill -9`: idle on the
pool's queue, it took the items already queued there and entered their
bodies with no run holding them, while a resume in another process could
run the same items. A worker so checks, before each try, that the process
that submitted it (`owner`) is alive, and exits when it is not: nobody
will read its results, and the queue it waits on is never closed. An
item's retry delay is waited in the workflow process (`schedule`): a try
is sent to a worker only once it is due."""

from __future__ import annotations

import os

from .._storage.pidspace import proc_stat


def owner_gone(owner: int) -> bool:
    """True once the process `owner` has died (a zombie counts as dead:
    its parent may not have reaped it yet). 0: no owner to check (a Dask
    worker works for the cluster, not for one process)."""
    if not owner or os.getppid() == owner:  # a fork or spawn pool's worker: one call
        return False
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process holds the pid: alive
        return False
    # No /proc here, or not this pid namespace's: alive as far as is known.
    return proc_stat(owner)[:1] == [b"Z"]


def leave_if_orphaned(owner: int) -> None:
    """Exit this worker, before its next try, once its owner is gone."""
    if owner_gone(owner):
        os._exit(0)
