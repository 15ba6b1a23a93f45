"""The record side of a `loop_over` block: its position, replay, per-item
checkpoints, the block record and the compaction that follows it. Only the
workflow process runs this code: workers never write."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._core import notify, unkept
from .._core.attempts import keep_failure
from .._core.changed import in_place_warning
from .._core.context import RunState
from .._core.identity import is_token, value_digest
from .._core.loadback import load_value
from .._core.named import names_modules, note_given, with_named
from .._core.ownstate import after_body
from .._core.replay import boundary, commit, encode_into, lookup, same_call
from .._core.sharing import back, note
from .._core.spec import step_spec
from .._core.written import made_here, with_written
from .._errortext import warn
from .._fingerprint.fingerprint import fingerprint_function
from .._fingerprint.reach import default_name
from .._storage.clock import now
from .._storage.keys import format_position, item_name
from .._storage.records import TRIES_KIND, StepRecord
from ..errors import ConfigurationError, CorruptRecordError
from .blockbound import bound_digest
from .blockfiles import ItemFiles
from .moves import Move, mark, move_all, one_copy_each, take
from .tries import KeptTries, Tries, keep_item


def label_of(fn: Callable[..., Any], name: str | None) -> str:
    return name or f"loop_over({default_name(fn)})"


def fingerprint_of(fn: Callable[..., Any], ctx: RunState | None = None) -> str:
    spec = step_spec(fn)
    if spec is not None:
        return spec.fingerprint_in(ctx) if ctx is not None else spec.fingerprint
    try:
        return fingerprint_function(fn).value
    except ConfigurationError:
        raise ConfigurationError(
            f"loop_over cannot fingerprint {fn!r}: pass a @durable.step or a function with "
            "retrievable source"
        ) from None


def persists(fn: Callable[..., Any]) -> bool:
    """False when fn is a `persist=False` step (or a partial of one)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    spec = step_spec(fn)
    return spec is None or spec.persist


class PlainBlock:
    """A block outside any run: nothing is looked up or recorded."""

    replayed = False
    checkpoint = False  # nothing is kept, so a graceful stop waits for the block

    def __init__(self, fn: Callable[..., Any], items: list[Any], name: str | None) -> None:
        self.label = label_of(fn, name)
        self.total = len(items)
        self.where, self.tries = ("", "", ""), Tries(fn)  # no run, no position (its events)

    def replay(self) -> list[Any]:
        raise AssertionError("a plain block has nothing to replay")

    def restore(self) -> tuple[list[Any], list[int]]:
        return [None] * self.total, list(range(self.total))

    def save_item(self, index: int, value: Any) -> None:
        pass

    def fail(self, exc: BaseException) -> None:
        pass

    def between_items(self) -> None:
        pass

    def commit(self, results: list[Any]) -> list[Any]:
        return results


class Block:
    """A block inside a run. Its position is taken when it is created."""

    def __init__(
        self,
        ctx: RunState,
        fn: Callable[..., Any],
        items: list[Any],
        name: str | None,
        checkpoint: bool,
    ) -> None:
        self.ctx, self.fn = ctx, fn
        self.label = label_of(fn, name)
        self.pos = ctx.take_position(f"block {self.label!r}")
        self.where = (ctx.run_id, ctx.workflow, format_position(self.pos))
        self.fp = fingerprint_of(fn, ctx)
        self.spec = step_spec(fn)  # its code checked again as an output is kept (`_same_code`)
        self.items = items
        # A persist=False step's outputs are never written (secrets, huge
        # transient values): the block leaves a marker, as such a step does,
        # keeps no item, and runs again on every resume.
        self.persist = persists(fn)
        self.checkpoint = checkpoint and self.persist
        # A partial's bound arguments are arguments of every call: they count
        # in the block's digest and in each item's (a plain fn: the items alone).
        self.bound = bound_digest(fn, ctx.argument_values, ctx.bodies)
        self.bound_changed = False  # seen changed since (`_bound_changed`)
        self.digest = self._digest(items)
        if names_modules(fn):  # `loop_over(call_tool, ["tools:search"])`: checked at a re-call (`named`)
            note_given(ctx, fn, self.label, self.fp)
        self.started = now()
        self.saved: list[int] = []
        self.digests: list[str] = []  # of the items, by `restore`
        self.restored = 0
        self.record = lookup(ctx, self.pos, self.label, self.fp, with_written(fn, self.digest, self.label, self.fp))
        self.tries = KeptTries(ctx, self.pos, fn, self.label, self.fp, self._item_digest, len(items), self.checkpoint)
        self.files, self.reused = ItemFiles(ctx, self.label, self.spec, self.tries), None
        if self.record is not None and self.record.persisted and self.record.artifacts:
            self.reused = self.files.recheck(self.record, len(items))  # a file gone: its item runs
            self.record = None if self.reused is not None else self.record

    def _digest(self, value: Any, held: list[Any] | None = None) -> str:
        """The digest of the items (or of one item) with the bound arguments,
        and the code of the modules they name when `fn` looks modules up (`named`); `held`: `sharing.note`'s."""
        if self.bound is None:
            return with_named(self.fn, value_digest(value, held), (value,), {})
        if self.bound.startswith("!"):  # bound arguments without a digest: changed
            return self.bound
        return with_named(self.fn, value_digest((self.bound, value), held), (value,), {})

    @property
    def replayed(self) -> bool:
        return self.record is not None and self.record.persisted

    def replay(self) -> list[Any]:
        assert self.record is not None
        # Item records left by a crash between the block record and their deletion.
        self._compact()
        value: list[Any] = back(self.record.extra, load_value(self.ctx, self.record), ((self.items,), {}))
        notify.replayed(self.ctx, self.record)
        return value

    def restore(self) -> tuple[list[Any], list[int]]:
        """The results already checkpointed, and the indexes still to run. A
        kept result belongs to its item, not to its index: when the items
        changed between calls (one added, removed, moved), each finds its own
        result wherever it was kept, and never another item's."""
        reused: dict[int, Any] = self.reused or {}  # outputs whose files are as they made them
        if not self.checkpoint:
            todo: list[int] = [i for i in range(len(self.items)) if i not in reused]
            move_all(self._budgets(todo), self._spare())
            self.restored = len(reused)
            return [reused.get(i) for i in range(len(self.items))], todo
        kept = self._kept()
        results: list[Any] = [None] * len(self.items)
        todo = []
        # Each item's digest as it is before it runs: the key its result is
        # kept under (`save_item`), even if running it changes the item.
        self.digests = [self._digest(item) for item in self.items]
        moves: dict[int, Move] = {}
        for i, digest in enumerate(self.digests):
            if i in reused:  # kept again, as the item's own
                results[i] = reused[i]
                self.save_item(i, reused[i])
                continue
            index, rec = take(kept.get(digest), i)
            if rec is None or not self.files.kept_item(i, rec):
                todo.append(i)
                continue
            results[i] = back(rec.extra, load_value(self.ctx, rec), ((self.items[i],), {}))
            if index != i:  # its old name may be overwritten by the item now there
                moves[i] = (index, rec, self._write)
        self.restored = len(self.items) - len(todo)
        move_all({**moves, **self._budgets(todo)}, self._spare())
        return results, todo

    def _spare(self) -> int:
        """The first index beyond the items and every record kept."""
        kept = set(self.ctx.items.get(self.pos, {})) | set(self.saved)
        return max(kept | {len(self.items) - 1}) + 1

    def _budgets(self, todo: list[int]) -> dict[int, Move]:
        """Each item to run goes on with the tries its budget kept; those
        kept at another index, to be kept again at the item's own."""
        moves: dict[int, Move] = {}
        if not self.tries.found:
            return moves  # none kept (most blocks): no item is digested for it
        for i in todo:
            moved = self.tries.start(i, self._item_digest(i))
            if moved is not None:
                moves[i] = (*moved, self.tries.write)
        return moves

    def _item_digest(self, index: int) -> str:
        """The item's digest as `restore` took it, else as it is now."""
        return self.digests[index] if self.digests else self._digest(self.items[index])

    def _kept(self) -> dict[str, dict[int, StepRecord]]:
        """The kept item records of this code, by item digest, then by the
        index they were kept at. A record made by other code is not reused,
        except under rebase, which vouches for the old code (never for
        another item's result: the digest still decides whose it is)."""
        rebase, here = self.ctx.policy == "rebase", made_here(self.fn)
        found: dict[str, dict[int, StepRecord]] = {}
        for index, body in self.ctx.items.get(self.pos, {}).items():
            try:
                rec = StepRecord.from_bytes(body)
            except Exception as e:
                name = item_name(self.pos, index)
                raise CorruptRecordError(self.ctx.run_id, self.pos, name, f"undecodable: {e}") from e
            digest = rec.args_digest or ""  # a record without one is no call's
            if rec.extra.get("in_place") or rec.kind == TRIES_KIND or rec.extra.get("made") != here:
                continue  # the item runs again: its change (to the item, or a global) is redone
            if same_call(rec, rec.fingerprint if rebase else self.fp, digest):
                found.setdefault(digest, {})[index] = rec
        return {digest: one_copy_each(recs) for digest, recs in found.items()}

    def save_item(self, index: int, value: Any) -> None:
        if not self.checkpoint or (self.ctx.unkept and unkept.holds(self.ctx, value)):  # no call when none
            return  # an output holding a persist=False step's is not kept: the item runs again
        self._same_code()
        digest = self.digests[index]
        rec = StepRecord(self.pos, "item", self.label, self.fp, digest, started=self.started)
        held: list[Any] = []  # what of the item its output holds: the item's again when restored
        with after_body():
            changed = self._digest(self.items[index], held) != digest or self._bound_changed()
        note(rec.extra, value, held, ((self.items[index],), {}))
        if changed:
            # Restoring it could not redo that change (of the item, or of the
            # `self` or partial arguments every item shares): `_kept` skips it.
            rec.extra["in_place"] = True
        if here := made_here(self.fn):  # a global it writes is this process's
            rec.extra["made"] = here
        rec.ended, rec.artifacts = now(), self.files.of(index)
        mark(rec)
        encode_into(self.ctx, rec, value)
        self._write(index, rec)

    def _write(self, index: int, rec: StepRecord) -> None:
        """Keep an item's record under its index. It replaces what is there:
        a record kept for another item (the items changed) is not this one's,
        and losing to it would lose this item's result."""
        rec.extra["index"] = index
        keep_item(self.ctx, self.pos, index, rec)
        self.saved.append(index)
        self.ctx.kept_items += 1  # the run is made by this code now (`lifecycle.made_nothing`)

    def between_items(self) -> None:
        """An item is a boundary, checkpointed or not, as an operation is
        (`replay.boundary`): a cancelled run is only ever restarted, so
        nothing it leaves is lost; a holder whose lease was lost (stopped
        past it, taken over) started the block's next items anyway, which
        the new holder ran too, when nothing was written between items."""
        boundary(self.ctx, self.pos)

    def fail(self, exc: BaseException) -> None:
        """Keep the block's failure for history; the items kept stay."""
        tried = len(self.ctx.failures.get(self.pos, ()))
        notify.failed(self.ctx, self.pos, self.label, self.fp, tried, exc, started=self.started)
        keep_failure(self.ctx, self.pos, exc, name=self.label, started=self.started, kind="loop")

    def _same_code(self) -> None:
        """A step's, as its call's output (`StepSpec.check_code`): a cell may have redefined it."""
        if self.spec is not None:
            self.spec.check_code(self.ctx, self.fp)

    def commit(self, results: list[Any]) -> list[Any]:
        self._same_code()
        if not self.persist:  # nothing holding them is kept either (`unkept`)
            unkept.note(self.ctx, results)
        if self.record is not None:  # the marker of a persist=False block is there already
            self.ctx.executed += 1
            notify.executed(self.ctx, self.record)
            return results
        written = with_written(self.fn, self.digest, self.label, self.fp)  # what its items wrote, as they left it
        rec = StepRecord(self.pos, "loop", self.label, self.fp, written, started=self.started)
        rec.extra.update(items=len(self.items), restored=self.restored)
        rec.artifacts = self.files.every(len(self.items))  # checked before a replay (`ItemFiles`)
        # The tries that failed before this one stay in the history, as a step's do.
        rec.attempts = list(self.ctx.failures.get(self.pos, []))
        held: list[Any] = []  # what of the items the outputs hold: the items' again when replayed
        if self._changed_in_place(held):
            rec.extra["in_place"] = True  # its replay is a changed call (`replay.lookup`)
            warn(in_place_warning(self.label))
        note(rec.extra, results, held if self.persist else [], ((self.items,), {}))
        value = commit(self.ctx, rec, results, persist=self.persist)
        self._compact()
        return value  # type: ignore[no-any-return]

    def _changed_in_place(self, held: list[Any]) -> bool:
        """Whether the items (or the arguments a partial or a bound method
        carries) changed while the block ran (`item["done"] = True`): a
        replay of the block returns its outputs but cannot redo that."""
        if is_token(self.digest):
            return False  # never replayed anyway
        with after_body():
            return self._bound_changed() or self._digest(self.items, held) != self.digest

    def _bound_changed(self) -> bool:
        """Whether the arguments a partial or a bound method carries changed
        since the block started (`self.total += x` in `loop_over(acc.add, ...)`).
        Items still on a thread pool may be changing them as they are read
        ("dictionary changed size during iteration"): changed. Once changed,
        they are not read again (an object collecting every output would cost
        a read of all of it per item)."""
        if self.bound_changed or self.bound is None or is_token(self.bound):
            return self.bound_changed
        with after_body():  # `identity.NO_DIGEST`
            now = bound_digest(self.fn, self.ctx.argument_values, self.ctx.bodies)
        self.bound_changed = now != self.bound
        return self.bound_changed

    def _compact(self) -> None:
        indexes = set(self.ctx.items.pop(self.pos, {})) | set(self.saved) | self.tries.written
        if indexes:
            names = [item_name(self.pos, i) for i in sorted(indexes)]
            self.ctx.store.drop_records(self.ctx.workflow, self.ctx.run_id, names)
        self.saved = []
        self.tries.written.clear()

