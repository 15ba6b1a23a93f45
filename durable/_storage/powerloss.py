"""Damage a power loss may have left in the middle of a local run log: a
block of the file zeroed, or an entry's data zeroed under its intact
header, with intact entries after it. A reader that meets damage asks the
run's manifest from which byte on the log was never known synced under a
level that gives such records up (`noted.unsynced_from`): damage there is
read as the log's end, as a torn tail is (`logentry.locate`), and damage
before it is raised. Asked only once damage is met: a whole log costs
nothing more to read."""

from __future__ import annotations

from .base import Store
from .manifest import decode_manifest
from .noted import DAMAGE, unsynced_from


def unsynced_of(store: Store, workflow: str, run_id: str) -> int | None:
    """The byte of the run's log from which damage is a power loss's, or
    None: none is (no manifest, a manifest that says nothing of it, or
    one that cannot be read: the log's own damage is then what is said)."""
    raw = store.peek_manifest(workflow, run_id)
    if raw is None:
        return None
    try:
        manifest = decode_manifest(store, workflow, run_id, raw, summary_only=True)
    except DAMAGE:
        return None
    return unsynced_from(manifest.extra)
