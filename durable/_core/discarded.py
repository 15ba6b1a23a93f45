"""The child runs a rerun discards with its parent's records
(`replay.discard_from`): a child at a position after the first changed one
runs afresh, as a step there does (one that failed there too). Its run is
removed with the records, so that an attempt that stops before reaching it
(a wait asked again, a crash) leaves nothing a later attempt would replay.
Only a child whose id is derived from this parent call (`<run id>.<position>`)
and whose manifest names it, in the parent's store or in the one the record
names (a child workflow kept in a store of its own, opened again by its
address): a child given its own id may be shared by other parents."""

from __future__ import annotations

from collections.abc import Iterable

from .._storage.base import Store
from .._storage.factory import store_at
from .._storage.keys import Position, as_position, format_position
from .._storage.lease import LEASE_TTL
from .._storage.manifest import decode_manifest
from ..errors import ConfigurationError, CorruptRecordError, IntegrityError
from .context import RunState


def forget_children(ctx: RunState, positions: Iterable[Position]) -> None:
    """Remove the derived child runs the records at `positions` name, or
    the failed tries kept there (a child that failed: its finished steps
    would replay), before the records go: a removal cut short leaves
    records that name them."""
    for pos in dict.fromkeys(positions):
        try:
            rec = ctx.records.get(pos)
        except (CorruptRecordError, IntegrityError):
            continue  # not read: it names no child that can be trusted
        link = rec.extra.get("child") if rec is not None and rec.kind == "workflow" else None
        link = ctx.failed_children.get(pos) if link is None else link
        run_id = f"{ctx.run_id}.{format_position(pos)}"
        if isinstance(link, dict) and link.get("run_id") == run_id:
            where = link.get("store")
            try:
                store = ctx.store if where is None else store_at(str(where))
            except ConfigurationError:
                continue  # a backend of the user's own: runs afresh in this attempt only
            _remove(ctx, store, str(link.get("workflow")), run_id, pos)


def _remove(ctx: RunState, store: Store, workflow: str, run_id: str, pos: Position) -> None:
    if store.load_manifest(workflow, run_id) is None:
        return  # gone
    # Only while this process still holds the parent: one that took it over
    # may have recorded this child anew, and use it.
    ctx.store.guard(ctx.workflow, ctx.run_id, now=True)
    held = store.acquire(workflow, run_id, LEASE_TTL)  # RunLockedError: run by another process
    try:
        mine = _made_here(store, workflow, run_id, ctx, pos)
    except BaseException:
        held.release()
        raise
    if not mine:
        held.release()
        return
    store.delete_held_run(workflow, run_id, held)


def _made_here(store: Store, workflow: str, run_id: str, ctx: RunState, pos: Position) -> bool:
    raw = store.load_manifest(workflow, run_id)
    if raw is None:
        return False
    link = decode_manifest(store, workflow, run_id, raw, summary_only=True).extra.get("parent")
    if not isinstance(link, dict):
        return False
    at = as_position(link.get("position"))
    here = (link.get("workflow"), link.get("run_id"), at is not None and format_position(at))
    return here == (ctx.workflow, ctx.run_id, format_position(pos))
