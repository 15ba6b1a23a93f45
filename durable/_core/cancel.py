"""Cancelling a run from outside: `durable cancel` writes a create-only
marker object in the run's folder (`_manage.cancel`); its holder looks for
it at operation boundaries, at most once per `Store.cancel_poll` seconds
(so a step pays a clock read, never a store round trip), and while it
waits (a durable sleep, a retry delay: `look`), and ends the run
`cancelled`. A run that starts or resumes with the marker present ends
`cancelled` at once; only a restart (which removes the run's objects, the
marker with them) runs it again."""

from __future__ import annotations

import functools
import time

from .._settings import env_number
from .._storage.base import Store
from .._storage.keys import cancel_key
from ..errors import Cancelled
from .context import RunState
from .plan import Look


def is_cancelled(store: Store, workflow: str, run_id: str, *, now: bool = False) -> bool:
    # A listing younger than the poll interval is as good as a look now,
    # unless a look now is asked for.
    fresh = 0.0 if now else poll_interval(store)
    return store.cancel_marked(workflow, run_id, fresh_within=fresh)


def withdraw_late(store: Store, workflow: str, run_id: str) -> None:
    """Remove the marker found on a completed run, under its lease. `cancel`
    refuses a run it reads as completed, so the marker was asked of an
    attempt that completed without looking again (within its poll
    interval): that cancel is over, and a completed run cannot be
    cancelled; left there, it ended the run's next attempt `cancelled`."""
    store.delete([cancel_key(workflow, run_id)])


def watch(ctx: RunState) -> None:
    """Arm the run's next look for its marker (its start just looked)."""
    ctx.cancel_due = time.monotonic() + poll_interval(ctx.store)


def poll(ctx: RunState, *, now: bool = False) -> None:
    """At an operation boundary once `ctx.cancel_due` has passed."""
    watch(ctx)
    cancelled = marked(ctx, now=now)
    if cancelled is not None:
        raise ctx.refuse(cancelled)


def marked(ctx: RunState, *, now: bool = False) -> Cancelled | None:
    """The cancel of the run, or of a run that called it (a child run's
    steps are its parent's work too: a parent cancelled while in its child
    stops there, not once the child has run every step), else None."""
    run: RunState | None = ctx
    while run is not None:
        if is_cancelled(run.store, run.workflow, run.run_id, now=now):
            return Cancelled(run.workflow, run.run_id)
        run = run.caller
    return None


def of_a_caller(ctx: RunState, e: Cancelled) -> bool:
    """Whether a cancel that reached the run is one of a run that called it:
    then it ends `cancelled` too (only its caller's restart runs it again),
    not `failed` as for the cancel of a child run it called."""
    run = ctx.caller
    while run is not None and (run.workflow, run.run_id) != (e.workflow, e.run_id):
        run = run.caller
    return run is not None


def poll_at_end(ctx: RunState) -> None:
    """The run's end looks whatever the interval, and afresh: a run told
    `cancelling` while its steps went on (each started before the holder's
    next look) would otherwise complete, though the cancel was taken. One
    read a run, never one a step."""
    poll(ctx, now=True)


def outranks(ctx: RunState, exc: Exception) -> None:
    """A run told `cancelling` ends `cancelled`, also when its attempt then
    fails (the step in flight raised, the body did) or pauses (`suspend()`,
    a `wait_for` with no answer): the cancel was taken, a `failed` run is
    one recover() runs again (DBOS's cancel outranks the error too), and a
    `Suspended` sends its caller to ask a person. One read, at such an end
    only. A marker that cannot be read leaves the end as it is: the run's
    next start reads it again (`refuse_cancelled`)."""
    try:
        cancelled = marked(ctx, now=True)
    except Exception:  # whatever the look raised, the run's own end is what it reports
        return
    if cancelled is not None:
        raise ctx.refuse(cancelled) from exc


def look(ctx: RunState) -> Look:
    """What a pause of the run (a durable sleep, a retry delay) looks at:
    the marker, afresh, each `pause_interval`. Before, a cancel waited out
    the pause (an hour's sleep) and ended the run only then."""
    return Look(pause_interval(ctx.store), functools.partial(_look_pausing, ctx))


def _look_pausing(ctx: RunState) -> None:
    """A look that cannot read the marker (the store away for a moment)
    leaves the pause as it is: the next look, or the run's next boundary,
    reads it again. A pause never read the store before: an hour's sleep
    must not fail on one unanswered read."""
    try:
        cancelled = marked(ctx, now=True)
    except Exception:
        return
    if cancelled is not None:
        raise ctx.refuse(cancelled)


def pause_interval(store: Store) -> float:
    """`poll_interval`, and no more often than the run's lease is renewed
    (on an object store), unless `DURABLE_CANCEL_POLL` says; at least 50 ms."""
    given = env_number(POLL, whole=False)
    return max(max(store.cancel_poll, store.renew_every) if given is None else given, 0.05)


POLL = "DURABLE_CANCEL_POLL"


def poll_interval(store: Store) -> float:
    given = env_number(POLL, whole=False)  # empty counts as unset, as every variable
    return store.cancel_poll if given is None else given
