"""A cached step called plainly: outside any run, inside another step, or
as a `loop_over` item. No run records it, so the cache entry is all there
is: a hit returns the entry's value, a miss runs the body (with the step's
retries for an item) and keeps its output for the next call."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from .._errortext import warn
from .._storage.base import Store
from .._storage.cachemarks import refused
from .._storage.cachestore import MISSING
from .._storage.clock import now
from .._storage.factory import default_store
from .._storage.keys import Position
from ..errors import SerializationError, StorageError
from . import artifacts, runread, unkept
from .bound import with_bound
from .cache import Ticket, kept_for, ticket_for
from .changed import not_cached_in_place
from .context import RunContext, RunState, current_state
from .identity import call_digest, changed_in_place
from .plan import Call, Plan, drive_sync
from .redact import holds_redacted
from .retry import RetryPolicy, retrying
from .sharing import back, shared
from .spec import StepSpec

ONCE = RetryPolicy()  # a plain call of a step: one try, no retries


def plain_plan(
    spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any], retry: RetryPolicy = ONCE
) -> Plan[Any]:
    """A cached step called plainly; a miss runs its body with `retry` (a
    `loop_over` item: the step's retries)."""
    ticket, value = _looked_up(spec, args, kwargs)
    if value is not MISSING:
        return value
    return (yield from _computed(spec, args, kwargs, ticket, retry))


def plain_call(spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`plain_plan` called from synchronous code, one try: a hit is answered
    at once, without driving a plan (which only the body's run needs)."""
    ticket, value = _looked_up(spec, args, kwargs)
    if value is not MISSING:
        return value
    return drive_sync(_computed(spec, args, kwargs, ticket, ONCE))


def _looked_up(
    spec: StepSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Ticket | None, Any]:
    """The call's ticket (None: it cannot be cached) and the value of its
    hit, else MISSING."""
    run = current_state()
    ticket = ticket_for(run.store if run is not None else default_store(), spec, args, kwargs, None)
    hit = ticket.lookup() if ticket is not None else None
    if hit is None:
        return ticket, MISSING
    if hit[0].record.artifacts:
        _reregister(hit[0].record.artifacts)
    return ticket, back(hit[0].record.extra, hit[1], (args, kwargs))  # parts of its arguments: theirs


def _computed(
    spec: StepSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    ticket: Ticket | None,
    retry: RetryPolicy,
) -> Plan[Any]:
    """A miss: the body runs, and its output is kept when it may be."""
    if ticket is None:
        return (yield from retrying(retry, lambda _: Call(spec.attempt(), args, kwargs)))
    found: list[tuple[str, str | None]] = []

    def attempt(_: int) -> Call:
        found.clear()  # what the try that returns registers
        enter = runread.watched(lambda: artifacts.collect_into(found), ticket.read)
        return Call(spec.attempt(), args, kwargs, enter)

    started = now()
    before = ticket.call or call_digest(spec.signature, args, kwargs, spec.name)
    rejoin = functools.partial(with_bound, spec.fn) if spec.binds else None
    if rejoin is not None:  # a bound method's instance may be changed too
        before = rejoin(before)
    value = yield from retrying(retry, attempt)
    derived = list(spec.artifacts(value)) if spec.artifacts is not None else []
    entries = _produced(ticket.store, spec, found + derived)
    _reregister(entries)
    held: list[Any] = []  # what its arguments hold, of which the entry notes the parts it returns
    if changed_in_place(spec.signature, args, kwargs, spec.name, before, rejoin, held):
        warn(not_cached_in_place(spec.name))
        return value  # a hit could not redo what the body did to its arguments
    if ticket.changed_captured() or ticket.read_its_run():
        return value  # nor what it did to the values its closure captured, nor its run
    run = current_state()
    if holds_redacted(value) or unkept.holds(run, value):
        return value  # a secret is never written (nor a persist=False step's output)
    try:
        shares = shared(value, held, (args, kwargs)) if held else None
        if run is None:
            return ticket.keep(value, entries, started, None, shares)[1]
        return kept_for(run, _position(run), ticket, value, entries, started, None, shares)[1]
    except SerializationError as e:
        warn(f"{e}; the output was not cached")
        return value
    except StorageError as e:  # a cache the caller may read, not write: a team mate's
        refused(ticket.store, e, "could not keep outputs in the cache of {url} ({error}); "
                "they are returned, not cached")  # fmt: skip
        return value


def _position(run: RunState) -> Position:
    """Where a lost lease is said to be found, for an entry kept on the
    run's behalf (`cache.kept_for`): the step running, else the block's."""
    pos = RunContext(run).step_index  # not `current_run()`: that is a read of the run (`runread`)
    return run.position if pos is None else pos


def _produced(store: Store, spec: StepSpec, found: list[Any]) -> list[dict[str, Any]]:
    if not found:
        return []
    # `produced` reports a missing file with the run's name; a plain call has none.
    ctx = RunState(run_id="(plain call)", workflow="", store=store)
    return artifacts.produced(ctx, 0, spec.name, found, spec.verify)


def _reregister(entries: Iterable[dict[str, Any]]) -> None:
    """A cached step called inside another step: its files count for that step too."""
    for entry in entries:
        artifacts.artifact(entry["url"], verify=entry.get("verify"))
