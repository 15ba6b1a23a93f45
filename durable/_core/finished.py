"""The engine's side of a run's note of its records (`_storage.noted`):
lowered before a rerun drops records, so that a holder killed after the
drop is not taken for a loss by the next resume."""

from __future__ import annotations

from collections.abc import Iterable

from .._storage.keys import Position
from .._storage.manifest import read_manifest, write_manifest
from .._storage.noted import note, note_synced
from .context import RunState


def lower(ctx: RunState, dropped: Iterable[Position]) -> None:
    """Before a rerun drops the records at `dropped`: the stored manifest
    notes the records left. One read and write of it, only when records go."""
    gone = set(dropped)
    manifest = read_manifest(ctx.store, ctx.workflow, ctx.run_id) if gone else None
    if manifest is None or "operations" not in manifest.extra:
        return
    note(manifest.extra, [p for p in ctx.records if p not in gone])
    # Under "batch", some may not be durable yet.
    note_synced(manifest.extra, ctx.store.sync_records(ctx.workflow, ctx.run_id))
    write_manifest(ctx.store, manifest)
    ctx.attempt, ctx.committed = manifest.extra["attempt"], 0  # the records after carry the new note
