"""The run-record log: the contract between a run and its operation
records (`steps/…`, `attempts/…`, `timers/…`, `items/…/…`), above the
primitive key store. Two implementations: one object per record, over any
key store (`ObjectRecords`, here: memory, S3, ...), and one append-only file
per run (`logrecords.LogRecords`, the local store's). On a key store the run's
lease holder groups the single objects into segments (`segments`,
`segmenter`), built on the primitives alone, so any backend gets them. The
shared conformance suite (tests/test_store_conformance.py) runs the contract
on both."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from ..errors import CorruptRecordError, IntegrityError, LeaseLostError
from .base import SHARED_BLOBS
from .keys import SEGMENTS, blob_name, run_prefix, space
from .manifest import decode_manifest  # it notes the token
from .segmenter import SegmentWriter
from .segments import read_snapshot

if TYPE_CHECKING:
    from .base import Store


class KeyStore(Protocol):
    """The primitive key store: all a backend implements (public as
    `durable.KeyStore`; `durable.open_store(backend)` builds a Store, leases
    included, over it; docs/storage.md "Your own store"). Keys are
    '/'-separated printable strings without `* ? [ ]`; values are bytes.
    Every client, in any process, sees every completed write at once."""

    def get(self, key: str) -> bytes | None:
        """The bytes at key, None when absent."""
        ...

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        """The keys that exist, with their bytes; absent ones are left out.
        Raise rather than leave out a key that could not be read."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Write or replace, atomically: a reader sees the old or the new bytes."""
        ...

    def create(self, key: str, data: bytes) -> bool:
        """Create-only and atomic: of any number of writers racing for an
        absent key, in any process, exactly one gets True and its bytes stay;
        False when the key exists (nothing written)."""
        ...

    def list(self, prefix: str) -> builtins.list[str]:
        """Every key starting with prefix ("" or ending in "/"), at any
        depth, read fresh: a key created anywhere is listed at once."""
        ...

    def delete(self, keys: Iterable[str]) -> None:
        """Remove these keys (any iterable); missing ones are no error."""
        ...


class RecordLog(Protocol):
    """One run's operation records, by name."""

    def read_all(self) -> dict[str, bytes]:
        """Every record, as the run holding the lease reads them (a log may
        repair its torn tail first)."""
        ...

    def peek(self) -> dict[str, bytes]:
        """Every record, for a reader without the lease: never repairs."""
        ...

    def names(self) -> builtins.list[str]:
        """The records' names, sorted, without reading their values if possible."""
        ...

    def append(self, name: str, data: bytes) -> bytes | None:
        """Create-only: the first record at a name wins. None when written
        (or when these very bytes are there), else the bytes already there."""
        ...

    def replace(self, name: str, data: bytes) -> None:
        """Write a record that may be written again (failed attempts, timers)."""
        ...

    def compact(self, names: Iterable[str]) -> None:
        """Drop records: a loop block's items once its record is written,
        the records a re-run discards."""
        ...


class ObjectRecords:
    """One object per record under the run's prefix, on any key store,
    grouped into segments by the run's lease holder (`writer`); a reader
    without the lease merges both (`segments.read_snapshot`)."""

    def __init__(
        self,
        store: KeyStore,
        workflow: str,
        run_id: str,
        writer: SegmentWriter | None = None,
        key: bytes | None = None,
        where: str = "",  # the incarnation's folder (`keys.space`)
    ) -> None:
        self.store, self.run_id, self.writer, self.where = store, run_id, writer, where
        self.root = run_prefix(workflow, run_id)
        self.base = self.root + where
        # The signing key segments are sealed with: the store's own by default.
        self.key = writer.key if writer is not None else key or getattr(store, "signing_key", None)

    def read_all(self) -> dict[str, bytes]:
        """One listing, one batched read (of segments and single objects)."""
        if self.writer is not None:
            return self.writer.read()
        return self.peek()

    def peek(self) -> dict[str, bytes]:
        return read_snapshot(self.store, self.root, self.run_id, self.key, self.where).records

    def names(self) -> builtins.list[str]:
        return sorted(self.peek())

    def append(self, name: str, data: bytes) -> bytes | None:
        if self.writer is not None:
            return self.writer.append(name, data)
        segments = self._segments()
        if name in segments:
            held = segments[name]
            if held is None:
                why = f"a segment dropped {name}; only the run's lease holder can write it again"
                raise LeaseLostError(self.run_id, None, why=why)
            return None if held == data else held
        key = self.base + name
        if self.store.create(key, data):
            return None
        existing = self.store.get(key)
        return None if existing == data else existing

    def replace(self, name: str, data: bytes) -> None:
        if self.writer is not None:
            self.writer.replace(name, data)
        else:
            # Without the lease, over a name a segment holds, this makes the
            # two disagree: every reader then refuses the record (fail closed).
            self.store.put(self.base + name, data)

    def compact(self, names: Iterable[str]) -> None:
        if self.writer is not None:
            self.writer.drop(names)
            return
        names = list(names)
        if names and not set(names).isdisjoint(self._segments()):
            why = "only the run's lease holder can drop records that a segment holds"
            raise LeaseLostError(self.run_id, None, why=why)
        self.store.delete(self.base + n for n in names)

    def _segments(self) -> dict[str, bytes | None]:
        """What the run's segments hold, by name (None: dropped there): a
        record written without the lease (tools, tests) must still lose to
        one a segment holds. One listing when there are no segments."""
        if not self.store.list(self.base + SEGMENTS):
            return {}
        return read_snapshot(self.store, self.root, self.run_id, self.key, self.where).latest


def run_space(store: Store, workflow: str, run_id: str) -> str:
    """The folder below the run's prefix of the incarnation its manifest,
    last read or written here, named; else read from the manifest now
    (none: the run's prefix, as before tokens)."""
    token = store._spaces.get((workflow, run_id))
    if token is None:
        raw = store.peek_manifest(workflow, run_id)
        if raw is not None:
            try:
                token = decode_manifest(store, workflow, run_id, raw, summary_only=True).incarnation
            except (CorruptRecordError, IntegrityError):
                pass  # no run goes on from it (`outcome.existing_run` refuses): the prefix's
    return space(token or "")


def blob_key(store: Store, workflow: str, run_id: str, digest: str) -> str:
    """A run's blob in its incarnation's folder, as its records are: a late
    deletion of a removed run's blob (`durable rm` stalled) never reaches
    the one a run started afresh under its id wrote with the same bytes,
    nor does a late write land where that run reads. The step cache's
    blobs are no run's: at their prefix."""
    shared = not store.incarnations or (workflow, run_id) == SHARED_BLOBS
    where = "" if shared else run_space(store, workflow, run_id)
    return run_prefix(workflow, run_id) + where + blob_name(digest)


def blob_keys(store: Store, workflow: str, run_id: str, digest: str) -> list[str]:
    """Where a run's blob is read: its incarnation's folder (`blob_key`), then
    the run's prefix, where a run recorded with a token before blobs moved
    into the folder (a format-1 manifest) has them; the name is the bytes'
    sha256, so a copy found there is the same bytes."""
    key = blob_key(store, workflow, run_id, digest)
    prefix = run_prefix(workflow, run_id) + blob_name(digest)
    return [key] if key == prefix else [key, prefix]


def run_records(store: Store, workflow: str, run_id: str) -> ObjectRecords:
    """The record log of the run's incarnation (`keys.INCARNATION`) on a key
    store, grouped into segments while `store` holds the run's lease
    (`run_space`: which incarnation's)."""
    run, where = (workflow, run_id), run_space(store, workflow, run_id)
    writer = store._writers.get(run)
    if writer is not None and writer.where != where:
        writer = None  # the run's manifest was made since (its first write): a new incarnation
    if writer is None and run in store._held:
        guard = lambda: store.guard(workflow, run_id)  # noqa: E731
        key, root = store.signing_key, run_prefix(workflow, run_id)
        writer = store._writers[run] = SegmentWriter(store, root, run_id, key, guard, where)
        writer.claim = bool(getattr(store._held[run], "took_over", False))
    return ObjectRecords(store, workflow, run_id, writer, store.signing_key, where)
