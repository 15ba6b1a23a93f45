"""Fencing: nothing is written for a run once its lease is lost.

A store remembers the leases it hands out (`Held`), and every write to a run
(a record, a segment, a blob, the manifest, a deletion) first calls `Store.guard`, which
checks that run's lease: a flock's file must still be the run's lease file,
an object lease must still be the newest generation (renewed there and then
when it might have expired). A holder that stalled past its lease and was
taken over therefore raises `LeaseLostError` instead of writing.

Manifest writes are also compare-and-swap, so that even a write racing that
check can never replace a newer manifest. On object stores the manifest is a
series of generation objects `<run>/run/<n>` (the highest is the manifest):
a writer creates n+1 with a create-only write, where n is the generation it
last read or wrote, and checks with a fresh listing that n+1 is the newest;
the local store compares the manifest file's identity instead (`_localstore`)."""

from __future__ import annotations

import contextlib
import sys
import time
import weakref
from collections.abc import Callable, Generator
from inspect import GEN_CLOSED, getgeneratorstate
from typing import TYPE_CHECKING, Any

from ..errors import DurableError, LeaseLostError, StorageError
from .keys import generation_key, generation_of, manifest_key
from .lease import Lease, Watching

if TYPE_CHECKING:
    from .storecore import StoreCore

_ATTEMPTS = 8  # re-reads while other writers move the newest generation
Owner = Generator[Any, Any, Any]  # the plan that took a lease and releases it


class Held:
    """A lease a store handed out: `check` before writing, `release` once.

    A workflow's lease is owned by the plan (generator) that took it. A
    Ctrl-C landing in its release (at any line: cleanup is Python code too)
    still ends that plan, and the lease would stay held with nobody left to
    release it, the process locked out of its own run. So every lease held
    here is kept in `_HERE` until its release is done, and the next acquire
    of the run in this process releases one whose owner has ended
    (`reclaim`); a live owner's (another thread's, an async task's, an outer
    call's) is left alone: it still runs the run."""

    def __init__(
        self,
        lease: Lease,
        forget: Callable[[], None],
        flush: Callable[[], None] | None = None,
        owner: Owner | None = None,
        where: tuple[str, str, str] = ("", "", ""),
    ) -> None:
        self.lease = lease
        self._forget = forget
        self._flush = flush
        # Weak: this registry must not keep an abandoned plan from being
        # collected, which closes it and so runs its release.
        self.owner, self.where = None if owner is None else weakref.ref(owner), where
        # Before every write: the lease's own check, one call rather than two.
        self.check: Callable[[], None] = lease.check
        self.callers: Callable[[], None] | None = None  # a child run's (`under`)
        if owner is not None:
            _HERE[where] = self

    def confirm(self) -> None:
        """`check`, asked of the store now where the lease can say
        (`ObjectLease.confirm`); a lock's check always asks its file."""
        getattr(self.lease, "confirm", self.lease.check)()
        if self.callers is not None:
            self.callers()  # its callers' leases too (`under`)

    def under(self, callers: Callable[[], None]) -> None:
        """Fence every write of this run with `callers` too: a child run's,
        whose own lease (taken, maybe renewed, by this process) says nothing of its
        parent's. A parent that stalled past its lease once it looked at it, before
        the child's first write, was taken over meanwhile: the child's manifest,
        written from it, started the child from a parent no longer held (hunt57)."""
        own, self.callers = self.lease.check, callers

        def check() -> None:
            own()
            callers()

        self.check = check

    @property
    def lost(self) -> bool:
        return bool(getattr(self.lease, "lost", False))

    @lost.setter
    def lost(self, value: bool) -> None:  # what a renewal that found a takeover sets
        self.lease.lost = value  # type: ignore[attr-defined]

    @property
    def leaked(self) -> bool:
        """Whether the plan that took the lease has ended without releasing it."""
        if self.owner is None:
            return False
        plan = self.owner()
        return plan is None or getgeneratorstate(plan) == GEN_CLOSED

    def __getattr__(self, name: str) -> Any:
        if name == "lease":  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.lease, name)  # the lease's own state (lost, generation, ...)

    def release(self, *, delete: bool = False) -> None:
        """Give the lease up; with `delete` (the run is being removed), remove
        the lease itself too, in an order that never lets two processes hold
        the run (see `FileLease`, `ObjectLease`). Without `delete`, `flush`
        runs first, while the lease still fences its writes; it only tidies
        (records are durable as written), so its failure never stops the
        release. Re-runnable: cut short, it is run again by `reclaim`."""
        try:
            if not delete and self._flush is not None:
                try:  # (not contextlib.suppress: every call of a workflow releases one)
                    self._flush()
                except (DurableError, OSError):
                    pass
        finally:  # whatever the flush did (or a Ctrl-C landing in it), the lease goes
            try:
                self._forget()
                _gate_done(self.lease)
            finally:
                self.lease.release(delete=delete)
                # Last: cut short before here, the lease is still found by `reclaim`.
                if _HERE.get(self.where) is self:
                    del _HERE[self.where]


def _gate_done(lease: Lease) -> None:
    """Remove the run's gate its process pools handed out (`triesgate.done_with`).
    That module is loaded by a process pool's block only: without it, none was."""
    gates: Any = sys.modules.get(__package__ + ".triesgate")
    if gates is not None:
        gates.done_with(lease)


def watched(take: Callable[[], Lease], block: bool) -> Lease:
    """`take()`, which raises `Watching` while an expired lease of another
    host is watched before being taken over; with `block`, waited out here
    (durable's own tools: cancel, fork, delete), else raised for the caller
    to wait (a workflow's plan, whose async driver awaits it)."""
    while True:
        try:
            return take()
        except Watching as w:
            if not block:
                raise
            time.sleep(w.seconds)


# The leases workflows hold in this process, by (store url, workflow, run id).
_HERE: dict[tuple[str, str, str], Held] = {}


def reclaim(where: tuple[str, str, str]) -> None:
    """Release the lease held here on `where` if its owner ended without
    releasing it (see `Held`): before this process takes that run's lease."""
    held = _HERE.get(where)
    if held is not None and held.leaked:
        held.release()


def _generations(store: StoreCore, workflow: str, run_id: str) -> list[int]:
    keys = store.list(manifest_key(workflow, run_id) + "/")
    return sorted(g[2] for k in keys if (g := generation_of(k)) is not None)


def load_generation(store: StoreCore, workflow: str, run_id: str) -> tuple[bytes | None, int]:
    """The newest manifest generation's bytes (None when there is none) and
    its number (0 then)."""
    for _ in range(_ATTEMPTS):
        gens = _generations(store, workflow, run_id)
        if not gens:
            return None, 0
        data = store.get(generation_key(workflow, run_id, gens[-1]))
        if data is not None:
            return data, gens[-1]
        # Replaced between the listing and the read: list again.
    raise StorageError(store.url, f"{workflow}/{run_id}: the manifest kept changing while read")


def save_generation(
    store: StoreCore, workflow: str, run_id: str, data: bytes, seen: int | None
) -> int:
    """Write the generation after `seen` (the one this writer last read or
    wrote; None: whatever is newest now) and return it; `LeaseLostError`
    when another writer got there first."""
    base = _generations(store, workflow, run_id)[-1:] if seen is None else [seen]
    gen = (base[0] if base else 0) + 1
    key = generation_key(workflow, run_id, gen)
    if not store.create(key, data):
        raise LeaseLostError(run_id, None, why="another process wrote the run's manifest")
    gens = _generations(store, workflow, run_id)
    if gens[-1:] != [gen]:
        # A long-deleted generation recreated below the newest: never the
        # manifest, and this writer is stale.
        with contextlib.suppress(Exception):
            store.delete([key])
        raise LeaseLostError(run_id, None, why="another process wrote the run's manifest")
    older = [g for g in gens if g < gen]
    if len(older) > 1:
        # Older generations decide nothing (the newest is the manifest), so
        # they go two at a time: a resume writes the manifest twice (started,
        # then ended or paused) and makes one request to clear them, not two.
        with contextlib.suppress(Exception):
            store.delete(generation_key(workflow, run_id, g) for g in older)
    return gen
