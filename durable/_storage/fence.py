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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import DurableError, LeaseLostError, StorageError
from .keys import generation_key, generation_of, manifest_key
from .lease import Lease

if TYPE_CHECKING:
    from .base import Store

_ATTEMPTS = 8  # re-reads while other writers move the newest generation


class Held:
    """A lease a store handed out: `check` before writing, `release` once."""

    def __init__(
        self, lease: Lease, forget: Callable[[], None], flush: Callable[[], None] | None = None
    ) -> None:
        self.lease = lease
        self._forget = forget
        self._flush = flush
        # Before every write: the lease's own check, one call rather than two.
        self.check: Callable[[], None] = lease.check

    @property
    def lost(self) -> bool:
        return bool(getattr(self.lease, "lost", False))

    @lost.setter
    def lost(self, value: bool) -> None:  # what a renewal that found a takeover sets
        self.lease.lost = value  # type: ignore[attr-defined]

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
        release."""
        try:
            if not delete and self._flush is not None:
                try:  # (not contextlib.suppress: every call of a workflow releases one)
                    self._flush()
                except (DurableError, OSError):
                    pass
        finally:  # whatever the flush did (or a Ctrl-C landing in it), the lease goes
            try:
                self._forget()
            finally:
                self.lease.release(delete=delete)


def _generations(store: Store, workflow: str, run_id: str) -> list[int]:
    keys = store.list(manifest_key(workflow, run_id) + "/")
    return sorted(g[2] for k in keys if (g := generation_of(k)) is not None)


def load_generation(store: Store, workflow: str, run_id: str) -> tuple[bytes | None, int]:
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
    store: Store, workflow: str, run_id: str, data: bytes, seen: int | None
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
    with contextlib.suppress(Exception):  # older generations decide nothing now
        store.delete(generation_key(workflow, run_id, g) for g in gens if g < gen)
    return gen
