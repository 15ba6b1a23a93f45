"""`durable cancel` / `Workflow.cancel`: mark a run cancelled.

The mark is a create-only marker object in the run's folder, which the
run's holder looks for at its operation boundaries (`_core.cancel`). When
no process holds the run, its status is set to `cancelled` here at once;
when one does, it ends the run `cancelled` at its next look for the
marker (`_core.cancel`: a step boundary now and then, a sleep or a retry
delay while it waits, and the run's end)."""

from __future__ import annotations

import json
import os
import time

from .._errortext import shell_words
from .._frozen import Frozen, dataclass
from .._storage.base import Store
from .._storage.keycheck import check_names
from .._storage.keys import cancel_key
from .._storage.lease import LEASE_TTL
from .._storage.manifest import write_manifest
from .._storage.pidspace import host_name
from ..errors import ConfigurationError, RunLockedError
from .runs import read_manifest


@dataclass(frozen=True)
class Cancellation(Frozen):
    """What `cancel` did: `status` is "cancelled" (done: no process held the
    run) or "cancelling" (its holder, `holder`, stops at its next step)."""

    workflow: str
    run_id: str
    status: str
    holder: str | None = None
    # When the run had been cancelled, for one cancelled before this call (a
    # second cancel did nothing); None when this call cancelled it or asked to.
    since: float | None = None


def cancel_run(store: Store, workflow: str, run_id: str) -> Cancellation:
    check_names(workflow, run_id)
    manifest = read_manifest(store, workflow, run_id)  # RunNotFoundError if none
    if manifest.status == "completed":
        raise _completed(run_id)
    if manifest.status != "cancelled":
        doc = {"since": time.time(), "host": host_name(), "pid": os.getpid()}
        store.create(cancel_key(workflow, run_id), json.dumps(doc).encode())  # once is enough
    try:
        lease = store.acquire(workflow, run_id, LEASE_TTL)
    except RunLockedError as e:
        return Cancellation(workflow, run_id, "cancelling", e.holder)
    try:
        manifest = read_manifest(store, workflow, run_id)  # as of now, under the lease
        if manifest.status == "completed":  # it finished before we got here
            store.delete([cancel_key(workflow, run_id)])
            raise _completed(run_id)
        since = manifest.updated if manifest.status == "cancelled" else None  # a cancel before this one did it
        if since is None:
            manifest.status, manifest.reason = "cancelled", "cancelled"
            write_manifest(store, manifest)
    finally:
        lease.release()
    return Cancellation(workflow, run_id, "cancelled", since=since)


def _completed(run_id: str) -> ConfigurationError:
    return ConfigurationError(
        f"run {run_id!r} has completed; there is nothing to cancel (remove it with "
        f"`durable {shell_words('rm', run_id)}` if it is no longer wanted)"
    )
