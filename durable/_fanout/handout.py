"""When a `loop_over` try handed to another process's worker (a process
pool's, a Dask cluster's) may still start: only while the run's lease is
surely this process's.

A worker has no lease to look at, and goes on while the workflow process
stalls (SIGSTOP, a suspended laptop, a long GC pause): the tries queued to
it before a stall past the lease started in it after another process took
the run over, and ran beside the new holder's (hunt57). So each try is
handed out only while the run's leases hold (`still_held`: a renewal after
a stall), with the time they are surely held until (`held_until`, two
thirds of a lease after its last renewal), and the worker starts the try
only before then; past it, it hands the try back unstarted, and the
workflow process hands it out again under its lease as it is now, or finds
the lease lost. What can still run after a stall: the tries that started
before that time, one per worker at most.

A process pool's worker reads both clocks of the lease (wall and elapsed:
one host); a Dask worker, maybe on another host, the wall clock, whose
drift from this host's must stay under a third of the lease (the margin an
object lease keeps for it: 10 s of the default 30 s). A local folder's
lease lasts as long as its holder: no time is handed out with it."""

from __future__ import annotations

import time
from collections.abc import Sequence

from .._core.context import ItemScope, RunState
from .._core.stillheld import held_until, still_held
from .._storage.leasewatch import elapsed
from ..errors import ConfigurationError

Until = tuple[float, float] | None  # (wall clock, elapsed clock); None: no time limit
_AHEAD = 3  # tries handed back early by one block's workers before their clock is refused


def hand_out(run: RunState | None, scopes: Sequence[ItemScope | None] | None) -> Until:
    """Before tries are handed to workers: `LeaseLostError` once the run's
    lease, or a caller's, was lost; else until when they may start."""
    if run is None:  # outside a run: nothing to fence
        return None
    still_held(run, next((scope[0] for scope in scopes or () if scope is not None), 0))
    return held_until(run)


def lapsed(until: Until, here: bool) -> float | None:
    """In the worker, as a try is about to start: None while the time it was
    handed out with lasts, else what the worker hands back (`NotStarted`):
    that time on the wall clock, or 0.0 when the elapsed clock ended it (this
    host's: its wall clock was set back, no worker's clock runs ahead).
    `here`: the worker runs on the workflow's host."""
    if until is None:
        return None
    if time.time() >= until[0]:
        return until[0]
    return 0.0 if here and elapsed() >= until[1] else None


class NotStarted(Exception):
    """A try a worker handed back unstarted (`lapsed`): `until`, the time it
    was handed out with, as the workflow process's wall clock reads it."""

    def __init__(self, until: float) -> None:
        super().__init__(until)
        self.until = until


class HandedBack:
    """The tries a block's workers handed back: each goes out again. One
    handed back before its time was over here came from a worker whose clock
    runs ahead of this host's: past a few, a clear error, rather than tries
    handed out and back for ever."""

    def __init__(self) -> None:
        self.early = 0

    def again(self, back: NotStarted) -> None:
        if time.time() >= back.until:
            return
        self.early += 1
        if self.early >= _AHEAD:
            raise ConfigurationError(
                f"{self.early} loop_over tries were handed back unstarted by a worker whose clock "
                "runs ahead of this process's by more than the run's lease leaves in hand (a "
                "third of lease_ttl): its tries would start after the lease they were handed out "
                "under may have passed to another process. Set the worker's clock right (NTP), or "
                "open the store with a longer lease_ttl"
            )
