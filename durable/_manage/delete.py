"""Deleting one run (`durable rm`, `Workflow.delete()`, each run `gc`
removes): every object of it, under its lease, and only while it is still
the run that was chosen."""

from __future__ import annotations

from .._storage.base import Store
from .._storage.keycheck import check_names
from .._storage.lease import LEASE_TTL
from ..errors import RunNotFoundError
from .reads import run_objects
from .runs import RunInfo, not_found, run_info


def delete_run(
    store: Store, workflow: str, run_id: str, *, as_listed: RunInfo | None = None,
    leftover: bool = False,
) -> bool:
    """Remove every object of a run. Refuses (RunLockedError) while a live
    process holds it. With `as_listed` (what `gc` chose it by), only while
    the run is still as listed, checked under its lease: a run resumed since
    (completed, or no longer old) is kept, and False returned. With
    `leftover` (objects listed without a manifest), only while there is
    still none: a run of that id started and ended since is kept."""
    check_names(workflow, run_id)
    if not run_objects(store, workflow, run_id):
        raise not_found(store, workflow, run_id)
    lease = store.acquire(workflow, run_id, LEASE_TTL)
    if (as_listed is not None and not _still_as_listed(store, as_listed)) or (
        leftover and store.load_manifest(workflow, run_id) is not None
    ):
        lease.release()
        return False
    store.delete_held_run(workflow, run_id, lease)
    return True


def _still_as_listed(store: Store, listed: RunInfo) -> bool:
    """Whether the run's manifest is the one listed. A run listed as
    interrupted (running, nobody holding it) reads as running under the
    lease gc holds now: the same manifest."""
    try:
        now_info = run_info(store, listed.workflow, listed.run_id)
    except RunNotFoundError:
        return False
    same = now_info.status == listed.status or (listed.status, now_info.status) == (
        "interrupted",
        "running",
    )
    return same and now_info.updated == listed.updated
