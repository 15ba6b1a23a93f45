"""The files a block's items register (`durable.artifact` in an item that
runs in the workflow process: no executor, a thread pool, `async def`), as
a step's: described in the block's record (each entry names its item) and in
a checkpointed item's, and checked before either is used again. A file now
missing or changed runs again the item that made it, not the others: the
block's record holds every item's output, so the rest are taken from it.
Items on a process pool or Dask register nothing (their worker has no run)."""

from __future__ import annotations

from typing import Any

from .._core.artifacts import produced, recheck
from .._core.context import RunState
from .._core.loadback import load_value
from .._core.spec import StepSpec
from .._storage.files import first_stale
from .._storage.records import StepRecord
from .tries import KeptTries

Entries = list[dict[str, Any]]


class ItemFiles:
    def __init__(self, ctx: RunState, label: str, spec: StepSpec | None, tries: KeptTries) -> None:
        self.ctx, self.label, self.tries = ctx, label, tries
        self.verify, self.policy = ("digest", "rerun") if spec is None else (spec.verify, spec.artifacts_policy)
        self.made: dict[int, Entries] = {}  # an item's, known: taken from a record, or described

    def of(self, index: int) -> Entries:
        """What item `index` registered (described once, when it is kept)."""
        known = self.made.get(index)
        if known is not None:
            return known
        found = self.tries.registered.get(index)
        entries = produced(self.ctx, self.tries.pos, self.label, found, self.verify) if found else []
        for entry in entries:
            entry["item"] = index
        self.made[index] = entries
        return entries

    def every(self, total: int) -> Entries:
        return [entry for i in range(total) for entry in self.of(i)]

    def kept_item(self, index: int, rec: StepRecord) -> bool:
        """Whether a checkpointed item's files are as it left them (else it runs again)."""
        if rec.artifacts and first_stale(rec.artifacts, self.ctx.store) is not None:
            return False
        self.made[index] = list(rec.artifacts or [])
        return True

    def recheck(self, rec: StepRecord, total: int) -> dict[int, Any] | None:
        """Before the block's record is replayed: None when its files are as
        recorded; else (the record and every later one forgotten, as a step's,
        or refused under artifacts_policy="refuse") the outputs of the items
        whose files are, by index: the others run again."""
        stale = {e.get("item") for e in rec.artifacts if first_stale([e], self.ctx.store) is not None}
        if not stale:
            return None
        old = load_value(self.ctx, rec)
        if recheck(self.ctx, rec, self.policy) is None:
            return None  # as recorded again by now
        if None in stale or not isinstance(old, list) or len(old) != total:
            return {}  # an entry naming no item (not this code's): every item runs
        by_item: dict[int, Entries] = {}
        for entry in rec.artifacts:
            by_item.setdefault(entry["item"], []).append(entry)
        kept = {i: old[i] for i in range(total) if i not in stale}
        self.made.update({i: by_item.get(i, []) for i in kept})
        return kept
