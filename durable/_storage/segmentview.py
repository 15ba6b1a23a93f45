"""The lease holder's view of its run's records on an object store: what
the last read found (`segments.read_snapshot`), and the single objects it
wrote since that no segment holds yet. The writes, and the segments that
move those objects, are `segmenter`'s."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import LeaseLostError
from .segments import Entry, Objects, Snapshot, read_snapshot

_ATTEMPTS = 8  # claims of the next flush number while late segments keep landing


class SegmentView:
    """One run's records as its lease holder sees them: read, and kept
    as the holder writes (`SegmentWriter`, which writes the segments)."""

    def __init__(
        self,
        store: Objects,
        root: str,
        run_id: str,
        key: bytes | None,
        guard: Callable[[], None],
        where: str = "",  # the incarnation's folder (`keys.space`)
    ) -> None:
        self.store, self.root, self.where, self.base = store, root, where, root + where
        self.run_id, self.key, self.guard = run_id, key, guard
        self._snap: Snapshot | None = None  # None: not read yet
        self.claim = False  # the lease was taken over: see `read`
        self.pending: dict[str, bytes] = {}  # single objects no segment holds
        self.since = 0.0  # when the oldest of them was written
        # Whether the last read's listing showed the cancel marker, and when
        # (monotonic) that listing started, until asked once.
        self.marker_listed: tuple[bool, float] | None = None
        self._lock = threading.Lock()  # the fields above
        # Held while segments are written and a record replaced or dropped (never deleted then).
        self._flushing = threading.RLock()

    # -- reading --------------------------------------------------------------
    def read(self) -> dict[str, bytes]:
        """Read the run afresh, take it as the holder's view; its records.

        After a takeover of a lease its holder did not release (`claim`),
        that holder may have passed its lease check and stalled before a
        write that lands now. So the first read is followed by a segment of
        every single object read, under the next flush number: the old
        holder's late segment then finds the number taken, its late writes of
        single objects find the names held by a segment (a late copy there
        is dropped, anything else refused: `segments.merge`), and a record is
        only ever replaced or dropped in a segment (`replace`, `drop`)."""
        with self._flushing:
            records = self._read()
            tries = _ATTEMPTS if self.claim else 0
            while self.claim:
                try:
                    self._write(dict(self.pending))
                    self.claim = False
                except LeaseLostError as e:
                    tries -= 1
                    if e.written or not tries:
                        raise
                    self.guard()  # still ours: a late segment took the number first,
                    records = self._read()  # and landed before this view: it is the run's
            return records

    def _read(self) -> dict[str, bytes]:
        with self._flushing:
            listed_at = time.monotonic()
            snap = read_snapshot(self.store, self.root, self.run_id, self.key, self.where)
            records, self.marker_listed = snap.records, (snap.marked, listed_at)
            with self._lock:
                self.pending = {n: d for n, d in snap.singles.items() if n not in snap.covered}
                self.since = time.monotonic() if self.pending else 0.0
                snap.records, snap.singles = {}, {}  # the holder keeps what it needs only
                self._snap = snap
            return records

    def reset(self) -> None:
        """The run's objects were deleted: read again before the next write."""
        with self._flushing, self._lock:
            self._snap, self.pending, self.since = None, {}, 0.0
            self.marker_listed = None  # the marker went with them

    def marker_seen(self, fresh_within: float) -> bool | None:
        """The last listing's answer about the cancel marker, once; None when
        there is none to use. A marker seen stays (it is create-only), but
        its absence holds only for a listing at most `fresh_within` seconds
        old: a new run's first look for a cancel, a long step after its
        start, took the start's listing and ran on past the cancel."""
        listed, self.marker_listed = self.marker_listed, None
        if listed is None:
            return None
        seen, at = listed
        return True if seen else False if time.monotonic() - at <= fresh_within else None

    def _view(self) -> Snapshot:
        if self._snap is None:
            self.read()
        assert self._snap is not None
        return self._snap

    def _lookup(self, name: str) -> tuple[str, bytes | None]:
        """("segment" | "single" | "", its bytes) of a name, as the holder knows it."""
        snap = self._view()
        with self._lock:
            if name in snap.latest:
                return "segment", snap.latest[name]
            if name in self.pending:
                return "single", self.pending[name]
        return "", None

    def _pending(self, name: str, data: bytes) -> None:
        with self._lock:
            if not self.pending:
                self.since = time.monotonic()
            self.pending[name] = data

    def _write(self, entries: dict[str, bytes | None] | list[Entry]) -> None:
        raise NotImplementedError  # `SegmentWriter._write`
