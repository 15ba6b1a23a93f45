"""Whether this process may still start something for a run: the run's lease
is still its own, and so is each caller's, up the chain of child runs.

A child run has a lease of its own, free to take once its parent's holder
stalled past the parent's lease and another process took the parent over
(it completed the child, or has not reached it yet): the stalled holder,
continued, took the child's lease and ran the child's body, writing its
manifest, its status, from a parent it no longer held (hunt56). So a child
is started, and each of its operations is, only while every caller's lease
still holds; a lease's check is two clock reads while it is surely fresh
(`ObjectLease.check`), a look at the store only after a stall.

A worker of another process has no lease to look at: a try is handed to it
with the time the leases are surely held until (`held_until`), and it
starts the try only before then (`_fanout.handout`)."""

from __future__ import annotations

import math

from .._storage.keys import Position
from ..errors import LeaseLostError
from .context import RunState


def still_held(ctx: RunState, pos: Position) -> None:
    """`LeaseLostError` (the run's refusal: final) once the run's lease, or
    a caller's, was lost; `pos`: where nothing more is recorded."""
    run: RunState | None = ctx
    while run is not None:
        check = getattr(run.lease, "check", None)
        try:
            if check is not None:
                check()
        except LeaseLostError as e:
            if run is not ctx:  # said as the child's: its caller's position is the caller's record
                why = f"its caller, run {run.run_id!r}, lost its lease ({e.why or 'taken over'})"
                e = LeaseLostError(ctx.run_id, why=why)
            raise lease_lost(ctx, pos, e) from None
        run = run.caller


def held_until(ctx: RunState) -> tuple[float, float] | None:
    """Until when (wall clock, `leasewatch.elapsed`) the run's lease and
    each caller's are surely this process's, as the last look found them;
    None where no lease runs out while its holder lives (a local folder's
    lock, which only the holder's death or the lease file's removal ends)."""
    wall = ticks = math.inf
    run: RunState | None = ctx
    while run is not None:
        until = getattr(run.lease, "fresh_until", None)  # an `ObjectLease`'s
        if until is not None:
            wall, ticks = min(wall, until), min(ticks, getattr(run.lease, "fresh_elapsed", math.inf))
        run = run.caller
    return None if wall == math.inf else (wall, ticks)


def lease_lost(ctx: RunState, pos: Position, e: LeaseLostError) -> LeaseLostError:
    """The run's refusal for a lease found lost before a write at pos: final,
    since another process may be executing the run now."""
    return ctx.refuse(LeaseLostError(ctx.run_id, pos, why=e.why, written=e.written))
