"""The retry budget of `loop_over` items. A worker makes one try of an item
(`executors.call_item`) and the block decides whether another follows. In
a run, the workflow process keeps each failed try before the next one
starts: a `tries` record at the item's own name (`items/<position>/<index>`,
replaced by the item's result when it is checkpointed, dropped with the
block's items when the block is recorded). A resume after a crash so makes
only the tries left, as a plain step does (DESIGN §2); a try the crash cut
short was never kept, and is made again, as a step's is. A log from before
(no such records) starts every item with its full budget, as it did."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .._core import cancel, notify
from .._core.attempts import attempt_record, budget_spent
from .._core.context import ItemScope, RunState
from .._core.plan import Look
from .._core.replay import boundary, same_call
from .._core.retry import RetryPolicy
from .._core.spec import step_spec
from .._core.stillheld import lease_lost
from .._storage.keys import Position, call_key, item_name
from .._storage.records import TRIES_KIND, TRIES_MARK, Attempt, StepRecord, seal
from ..errors import (
    ControlFlow,
    CorruptRecordError,
    LeaseLostError,
    StorageError,
)
from .moves import mark, one_copy_each


class Tries:
    """Each item's tries in this block, counted here only (outside a run)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        spec = step_spec(fn)
        self.policy = spec.retry if spec is not None else RetryPolicy()
        self.used: dict[int, int] = {}  # tries of its budget made, by item index
        self.retrying: set[int] = set()  # items whose next try is a retry (`scope`)
        # Whether a graceful stop ends an item's retry delay: not in a block
        # without checkpoints, one unit that finishes first (its finished
        # items are kept nowhere, and would run again on the resume).
        self.stops = True
        # An item's open budget kept from before: the retries= it was opened with.
        self.policies: dict[int, RetryPolicy] = {}

    def again(self, index: int, exc: Exception) -> float | None:
        """After the item at index failed with exc: the seconds to wait before
        its next try, None when it gives up (`RetryPolicy.after`, a step's
        rule). A suspend or a stop is no failure: it ends the item as it
        is, and keeps nothing."""
        if isinstance(exc, ControlFlow):
            return None
        n = self.used.get(index, 0)
        wait = self.policies.get(index, self.policy).after(exc, n)
        self.kept(index, exc, wait is not None)
        if wait is None:
            return None
        self.told(index, exc, wait)  # before the count moves on: the failed try's number
        self.used[index] = n + 1
        self.retrying.add(index)
        return wait

    def kept(self, index: int, exc: Exception, retry: bool) -> None:
        """Keep the failed try (nothing to keep outside a run)."""

    def told(self, index: int, exc: Exception, wait: float) -> None:
        """Say that the item's current try failed and another follows (no
        run to tell outside one)."""

    def look(self) -> Look | None:
        """What an item's retry delay waited here looks at (nothing outside a run)."""
        return None

    def scope(self, index: int) -> ItemScope | None:
        """The item's next try in the run (`current_run()`), taken just
        before the try starts, its delay over: none outside a run."""
        return None


class KeptTries(Tries):
    """The tries of a block's items in a run: read back from its records,
    and each failed one written before the next try starts."""

    def __init__(
        self,
        ctx: RunState,
        pos: Position,
        fn: Callable[..., Any],
        label: str,
        fp: str,
        digest_of: Callable[[int], str],
        total: int,
        checkpoint: bool = True,
    ) -> None:
        super().__init__(fn)
        self.stops = checkpoint
        self.total, self.lock = total, threading.Lock()
        self.keys: list[str] = []  # the items' idempotency keys (`key`), made once
        self.ctx, self.pos, self.label, self.fp = ctx, pos, label, fp
        # An item's digest, taken when it first fails (or when a kept budget
        # is looked for): a block of large items whose tries all pass, or
        # without retries, digests none of them for this.
        self.digest_of = digest_of
        self.failures: dict[int, list[Attempt]] = {}
        self.given_up: dict[int, int] = {}
        self.digests: dict[int, str] = {}
        self.written: set[int] = set()  # indexes holding a record of this block's
        self.ids: dict[int, Any] = {}  # each item's budget's record id (`moves.mark`)
        self.registered: dict[int, list[tuple[str, str | None]]] = {}  # by each item's last try
        # Read whatever the code's retries: a budget kept keeps its own.
        self.found = self._found()

    def _found(self) -> dict[str, dict[int, StepRecord]]:
        """The tries records of this code, by item digest, then by index."""
        rebase = self.ctx.policy == "rebase"
        found: dict[str, dict[int, StepRecord]] = {}
        for index, body in self.ctx.items.get(self.pos, {}).items():
            if TRIES_KIND.encode() not in body:
                continue  # an item's result (most records): not decoded twice
            try:
                rec = StepRecord.from_bytes(body)
            except Exception as e:
                name = item_name(self.pos, index)
                raise CorruptRecordError(self.ctx.run_id, self.pos, name, f"undecodable: {e}") from e
            digest = rec.args_digest or ""
            if rec.kind == TRIES_KIND and same_call(rec, rec.fingerprint if rebase else self.fp, digest):
                found.setdefault(digest[len(TRIES_MARK) :], {})[index] = rec
        return {digest: one_copy_each(recs) for digest, recs in found.items()}

    def start(self, index: int, digest: str) -> tuple[int, StepRecord] | None:
        """The item at index, of this digest, goes on with the budget its
        tries kept (a record kept at another index counts: the items moved).
        Such a record is returned with its index, to be kept again at the
        item's own (`Block.restore`): its old name may be written over by
        the item now there, or now hold a result restored there."""
        self.digests[index] = digest
        kept = self.found.get(digest, {})
        at = index if index in kept else min(kept, default=index)
        # Taken once: an equal item at another index makes tries of its own.
        rec = kept.pop(at, None)
        if rec is None:
            return None
        given_up = rec.extra.get("given_up")
        earlier = len(rec.attempts)
        self.failures[index] = list(rec.attempts)
        self.ids[index] = rec.extra.get("kept")
        # A record without a count is no record of this rule's: nothing used.
        self.given_up[index] = given_up if isinstance(given_up, int) else earlier
        self.used[index] = budget_spent(earlier, self.given_up[index])
        retries = rec.extra.get("retries")
        if self.used[index] and type(retries) is int:  # else one kept before budgets kept theirs
            self.policies[index] = replace(self.policy, retries=retries)
        return (at, rec) if at != index else None

    def key(self, index: int) -> str:
        """The item's key (`item_keys`), all of the block's made at once."""
        with self.lock:
            if not self.keys:
                self.keys = item_keys([self.digest(i) for i in range(self.total)])
        return self.keys[index]

    def scope(self, index: int) -> ItemScope:
        if index in self.retrying:
            # A retry is a boundary once its delay is over, as a step's is
            # (`livecall.Tries.call`): the run refused by another of its tasks
            # or workers, cancelled, or its lease lost meanwhile, makes no try.
            self.retrying.discard(index)
            boundary(self.ctx, self.pos)
        key = ItemKey(self, index)
        self.registered[index] = key.found  # what the try registers (`context.enter_plain`)
        return self.pos, self._numbered(index), key

    def _numbered(self, index: int) -> int:
        """The item's current try as the run numbers it, as a step's tries
        are (`livecall.Tries.enter`): after the tries of budgets given up.
        What `current_run().attempt` says in it and its retry's event."""
        return self.given_up.get(index, 0) + self.used.get(index, 0)

    def digest(self, index: int) -> str:
        """The item's digest, taken once (`Block._item_digest`)."""
        return self.digests.get(index) or self.digests.setdefault(index, self.digest_of(index))

    def kept(self, index: int, exc: Exception, retry: bool) -> None:
        retries = self.policies.get(index, self.policy).retries
        if not retries:
            return  # no budget to keep: the first failure ends the item
        failures = self.failures.setdefault(index, [])
        failures.append(attempt_record(exc))
        digest = self.digest(index)
        rec = StepRecord(self.pos, TRIES_KIND, self.label, self.fp, TRIES_MARK + digest, persisted=False)
        rec.attempts = failures
        self.ids[index] = mark(rec, self.ids.get(index))
        # As a step's (`attempts.save_failures`): a call that gives up ends its budget.
        given_up = self.given_up.get(index, 0) if retry else len(failures)
        rec.extra.update(index=index, given_up=given_up, retries=retries)
        self.write(index, rec)

    def told(self, index: int, exc: Exception, wait: float) -> None:
        # As a step's retry (logged at WARNING, printed by `durable run`):
        # an item's retries passed without a word. Numbered in the run: the
        # new budget's count said "try 1" of a resume's first failed try.
        name, tried = f"{self.label} item {index}", self._numbered(index)
        budget = (self.used.get(index, 0), self.policies.get(index, self.policy).retries + 1)
        notify.failed(
            self.ctx, self.pos, name, self.fp, tried, exc, started=0.0, retry_in=wait, kind="loop", of_call=budget
        )

    def look(self) -> Look:
        return cancel.look(self.ctx)

    def write(self, index: int, rec: StepRecord) -> None:
        """Keep an item's tries under its index, in place of what is there."""
        rec.extra["index"] = index
        try:
            keep_item(self.ctx, self.pos, index, rec)
        except StorageError:
            # As a step's failed try (`attempts.save_failures`): the retry
            # matters more than a store that cannot take its count now.
            return
        self.written.add(index)


class ItemKey:
    """An item's part of its idempotency key (`RunContext.idempotency_key`),
    made when a try asks for it (in the workflow's process: a process
    pool's worker has no run to ask)."""

    __slots__ = ("found", "index", "tries")

    def __init__(self, tries: KeptTries, index: int) -> None:
        self.tries, self.index = tries, index
        self.found: list[tuple[str, str | None]] = []  # the artifacts its try registers

    def __str__(self) -> str:
        return self.tries.key(self.index)


def item_keys(digests: list[str]) -> list[str]:
    """Each item's key: its digest, and how many equal items come before it
    (`[5, 5]` are two charges). Not its index: once the items moved on a
    resume (`resume(items=[B, A])`), B was given A's key, and a service
    deduplicating by it answered B with A's receipt; B keeps its own."""
    seen: dict[str, int] = {}
    keys = []
    for digest in digests:
        head = call_key(digest)
        n = seen[head] = seen.get(head, -1) + 1
        keys.append(f"{head}-{n}" if n else head)
    return keys


def keep_item(ctx: RunState, pos: Position, index: int, rec: StepRecord) -> None:
    """Write the record kept at an item's name (its result, or its tries),
    replacing what is there, under the run's lease: a holder that lost it
    is refused and writes nothing."""
    store = ctx.store
    data = seal(rec.to_bytes(), store.signing_key)
    try:
        store.replace_record(ctx.workflow, ctx.run_id, item_name(pos, index), data)
    except LeaseLostError as e:  # checked before the write; `e.written` if found after it
        raise lease_lost(ctx, pos, e) from None
