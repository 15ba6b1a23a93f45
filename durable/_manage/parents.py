"""Whether a child run's parent run is still there, in the parent's store
or, for a child workflow kept in a store of its own, in the store its
manifest names (`address`): while it is, the child is its parent's."""

from __future__ import annotations

from .._storage.base import Store
from .._storage.factory import store_at
from .._storage.manifest import decode_manifest
from .runs import RunInfo, parent_of


def parent_here(store: Store, info: RunInfo) -> bool:
    """Whether a child run's parent run is still in its store: then the
    child is its parent's to resume (`recover` leaves it, with its answers
    and cancels) and to keep (`gc`: the parent resumes a failed child, and
    runs one that is gone again, its finished steps executing twice). A
    child goes once its parent has. A parent's store that cannot be opened
    or read here (a backend of the user's own, other credentials) counts as
    holding the parent: the child is kept, for `durable rm` to remove."""
    parent = parent_of(info)
    if parent is None:
        return False
    try:
        return _parents_store(store, info).load_manifest(*parent) is not None
    except Exception:  # fail closed: keep what may be a live parent's child
        return True


def _parents_store(store: Store, info: RunInfo) -> Store:
    raw = store.load_manifest(info.workflow, info.run_id)
    if raw is None:
        return store
    link = decode_manifest(store, info.workflow, info.run_id, raw, summary_only=True).extra["parent"]
    elsewhere = link.get("store")
    return store if elsewhere is None or elsewhere == store.address() else store_at(elsewhere)
