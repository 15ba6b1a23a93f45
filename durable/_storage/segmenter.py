"""The lease holder's side of segments (see `segments` for the layout).

A record is first written as its own create-only object, so it is durable when
the step returns. The holder moves those single objects into a segment every
`SEGMENT_RECORDS` records, once the oldest waited `SEGMENT_INTERVAL` seconds,
and at release (end, suspend, failure); then deletes them (a failed delete is
tried again at the next flush). Once a segment holds a name, the holder never
writes that name's single object again, and no record object is overwritten,
nor deleted before a segment holds it: a replaced or dropped record (rebase,
failed attempts, timers, a loop's items, a re-run's discards) goes into a new
segment at once (see `read` for why). When more than `MERGE_ABOVE` segments
pile up, or at release, one merged segment replaces them (MERGE_AT_RELEASE_BYTES).
Every segment write is checked against the lease first (`guard`) and is
create-only: a flush number someone else already used means another process
holds the run (`LeaseLostError`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

from ..errors import LeaseLostError, StorageError
from . import segments
from .keys import segment_name
from .segments import Entry, encode_segment, told_leftovers
from .segmentview import SegmentView

SEGMENT_RECORDS = 256
SEGMENT_INTERVAL = 5.0  # seconds
MERGE_ABOVE = 32
# At release all is merged into one segment, unless the records are bigger than this.
MERGE_AT_RELEASE_BYTES = 16 << 20


class SegmentWriter(SegmentView):
    """One run's records as its lease holder writes them."""

    # -- the record log's writes ------------------------------------------------
    def append(self, name: str, data: bytes) -> bytes | None:
        where, held = self._lookup(name)
        if where == "segment" and held is None:  # dropped: written again, in a segment
            with self._flushing:
                where, held = self._lookup(name)
                if held is None:
                    self._write({name: data})
                    return None
        if where:
            return None if held == data else held
        if not self.store.create(self.base + name, data):
            existing = self.store.get(self.base + name)
            if existing is None:  # moved into a segment meanwhile
                existing = self._lookup(name)[1]
            elif existing != data:  # not ours, yet the step ran here: see `_supersede`
                self._supersede(name, existing, data)
                return None
            return None if existing == data else existing
        self._pending(name, data)
        self._landed(self.flush_if_due)
        return None

    def replace(self, name: str, data: bytes) -> None:
        """Never an overwrite: a holder that lost its lease while its PUT was
        on the way would replace the next holder's record. A segment records
        the change (its first mention of a single object: the bytes it holds,
        which a crash before its delete leaves); a record none holds yet is
        created, create-only."""
        with self._flushing:
            where, held = self._lookup(name)
            if where == "single":
                self._write([(name, held), (name, data)])
            elif where == "segment":
                self._write({name: data})
            elif self.store.create(self.base + name, data):
                self._pending(name, data)
            else:
                self._supersede(name, self.store.get(self.base + name), data)
        self._landed(self.flush_if_due)

    def _supersede(self, name: str, found: bytes | None, data: bytes) -> None:
        """Our record over a single object at a name we never wrote: a late
        write of a holder that lost the run (stalled between its lease check and
        its PUT; a removed run's lands in its own folder, `keys.INCARNATION`). Taken
        as the first writer's, the run went on with that holder's output of a step
        run here. The segment first mentions the single (`segments.merge`), which then goes."""
        with self._flushing:
            if found is not None:
                self._pending(name, found)  # so that `_write` deletes it: a merge keeps no trace of it
            self._write([(name, found)] * (found is not None) + [(name, data)])

    def drop(self, names: Iterable[str]) -> None:
        """In a segment, never a plain DELETE (see `replace`): a single
        object's first mention there is its bytes, then its deletion."""
        with self._flushing:
            entries: list[Entry] = []
            for n in names:
                where, data = self._lookup(n)
                if where == "single":
                    entries.append((n, data))
                if where and data is not None:
                    entries.append((n, None))
            if entries:
                self._write(entries)

    # -- segments ----------------------------------------------------------------
    def _landed(self, then: Callable[[], None]) -> None:
        """`then()`, which follows a write that landed: a lost lease found
        there came after that write, and the error says so (not "nothing was
        recorded", which would be untrue)."""
        try:
            then()
        except LeaseLostError as e:
            raise LeaseLostError(self.run_id, None, why=e.why, written=True) from None

    def flush_if_due(self) -> None:
        with self._lock:
            due = len(self.pending) >= SEGMENT_RECORDS or (
                bool(self.pending) and time.monotonic() - self.since >= SEGMENT_INTERVAL
            )
        if not due or not self._flushing.acquire(blocking=False):
            return  # another thread is flushing
        try:
            self.flush()
        except StorageError:
            pass  # the records stay single objects, as written; the next flush retries
        finally:
            self._flushing.release()

    def flush(self, *, final: bool = False) -> None:
        """Move the single objects into a segment; merge when too many."""
        with self._flushing:
            if self._snap is None:
                return  # never read or written here: nothing to move
            with self._lock:
                entries: dict[str, bytes | None] = dict(self.pending)
            if entries:
                self._write(entries)
            else:
                self._clean()
            live = len(self._snap.live)
            if live > MERGE_ABOVE or (
                final and live > 1 and self._size() <= MERGE_AT_RELEASE_BYTES
            ):
                self._merge()

    def _size(self) -> int:
        snap = self._view()
        with self._lock:
            return sum(len(d) for d in snap.latest.values() if d is not None)

    def _write(self, entries: dict[str, bytes | None] | list[Entry]) -> None:
        """A segment of entries (flush number: the next one), then the
        single objects it covers (first mentioned with their bytes) go."""
        pairs = list(entries.items()) if isinstance(entries, dict) else entries
        snap = self._view()
        number = snap.last + 1
        name = segment_name(number, number)
        self._create(name, encode_segment(pairs, self.key))
        first: dict[str, bytes | None] = {}
        for n, d in pairs:
            first.setdefault(n, d)
        with self._lock:
            snap.last = number
            snap.live.append(name)
            snap.latest.update(pairs)
            for n, d in first.items():
                if n in self.pending and self.pending[n] == d:
                    del self.pending[n]
                    snap.covered.add(n)
            self.since = time.monotonic() if self.pending else 0.0
        # The segment holds the records; singles a failed delete left stay `covered` (no merge).
        with contextlib.suppress(StorageError):
            self._landed(self._clean)

    def _clean(self) -> None:
        """Delete the singles segments hold, merged segments, other incarnations' records."""
        snap = self._view()
        with self._lock:
            covered, gone = sorted(snap.covered), len(snap.superseded)
            stale = [self.base + n for n in snap.superseded] + snap.foreign
        if covered:
            self.guard()
            with segments.told_undeleted(self.root, self.run_id, len(covered)):
                self.store.delete(self.base + n for n in covered)
            with self._lock:
                snap.covered.difference_update(covered)
        if stale:
            self.guard()
            self.store.delete(stale)
            told_leftovers(self.root, self.run_id, stale[gone:])
            with self._lock:
                del snap.superseded[:gone], snap.foreign[:]

    def _merge(self) -> None:
        """One segment for flushes 1..n: the records as they are now. Only
        once no single object a segment holds is left, since a merge keeps
        no deletions (nothing is left for them to hide)."""
        snap = self._view()
        self._clean()
        with self._lock:
            if snap.covered:
                return
            kept: list[Entry] = [(n, d) for n, d in sorted(snap.latest.items()) if d is not None]
        name = segment_name(1, snap.last)
        self._create(name, encode_segment(kept, self.key))
        with self._lock:
            snap.superseded.extend(snap.live)
            snap.live = [name]
            snap.latest = dict(kept)
        self._clean()

    def _create(self, name: str, data: bytes) -> None:
        self.guard()
        key = self.base + name
        try:
            if self.store.create(key, data) or self.store.get(key) == data:
                return  # written (or our own write, whose reply was lost)
        except StorageError:
            # Every answer lost (a 500 after S3 stored it, resets past the client's retries),
            # the segment may be there: the next write reads the run again and sees. Kept, this
            # view numbered the next flush the same, found the name taken by its own fewer
            # records and took itself for a stale holder (LeaseLostError).
            with self._lock:
                self._snap = None
            raise
        why = f"another process wrote segment {name} of the run"
        raise LeaseLostError(self.run_id, None, why=why)
