"""Taking a run's lease, waiting for its holder when the caller asked to
(`with_options(wait=)`, `durable run --wait`), and holding it while a
plan runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from .._storage.base import Store
from .._storage.fence import Held, Owner
from .._storage.lease import LEASE_TTL, Watching
from ..errors import RunLockedError
from .events import RunWaiting, emit
from .plan import Plan, Wait, stop

T = TypeVar("T")


def holding(
    store: Store, workflow: str, run_id: str, wait: float | None, body: Callable[[Held], Plan[T]]
) -> Plan[T]:
    """`body(lease)`'s plan, run holding the run's lease, released when it
    ends. The lease is owned by the plan made here: a Ctrl-C landing in the
    release still ends that plan, and the next acquire of the run in this
    process then releases what it left (`fence.Held`)."""
    owner: list[Generator[Any, Any, T]] = []
    owner.append(_holding(store, workflow, run_id, wait, body, owner))
    return (yield from owner[0])


def _holding(
    store: Store,
    workflow: str,
    run_id: str,
    wait: float | None,
    body: Callable[[Held], Plan[T]],
    owner: list[Generator[Any, Any, T]],
) -> Plan[T]:
    lease = yield from acquire(store, workflow, run_id, wait, owner=owner[0])
    try:
        return (yield from body(lease))
    finally:
        lease.release()


def acquire(
    store: Store,
    workflow: str,
    run_id: str,
    wait: float | None,
    ttl: float = LEASE_TTL,
    owner: Owner | None = None,
) -> Plan[Held]:
    """The run's lease, waiting up to `wait` seconds for its holder. Each
    pause is a `Wait`, which an async caller awaits: its event loop goes
    on, and the holder may be another task of that loop. So is the watch of
    an expired lease of another host before taking it over (`Watching`,
    said in the log), however short `wait` is: a takeover needs it."""
    deadline = time.monotonic() + (wait or 0.0)
    told = False
    try:
        while True:
            try:
                return store.acquire(workflow, run_id, ttl, owner, block=False)
            except Watching as w:
                yield Wait(w.seconds)
                continue
            except RunLockedError as e:
                if time.monotonic() >= deadline:
                    if not wait or type(e) is not RunLockedError:
                        raise
                    raise _waited(e, wait) from None
                if not told:  # a silent wait looked like a hang: say once whom it waits for
                    told = True
                    stop.waiting += 1  # a signal now has no step in flight to finish
                    emit(RunWaiting(run_id, workflow, holder=e.holder, since=e.since,
                                    expires=e.expires, wait=float(wait or 0.0)))  # fmt: skip
            # Waiting on another holder's lease: polling is the only signal there is.
            yield Wait(min(0.2, max(0.0, deadline - time.monotonic())))
    finally:
        if told:
            stop.waiting -= 1


def _waited(e: RunLockedError, seconds: float) -> RunLockedError:
    """`e` once the advice to wait was taken: it says for how long, and
    keeps what the store added to it (that the holder is this very
    process)."""
    plain = str(RunLockedError(e.run_id, e.holder, e.since, e.expires))
    again = RunLockedError(e.run_id, e.holder, e.since, e.expires, waited=seconds)
    again.args = (f"{again}{str(e).removeprefix(plain)}",)
    return again
