"""The run-record log: the contract between a run and its operation
records (`steps/…`, `attempts/…`, `timers/…`, `items/…/…`), above the
primitive key store. Two implementations: one object per record, over any
key store (`ObjectRecords`, here: memory, S3, ...), and one append-only file
per run (`local.LogRecords`, the local store's). The shared conformance
suite (tests/test_store_conformance.py) runs the contract on both."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Protocol

from .keys import is_record, run_prefix


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
    """One object per record under the run's prefix, on any key store."""

    def __init__(self, store: KeyStore, workflow: str, run_id: str) -> None:
        self.store = store
        self.base = run_prefix(workflow, run_id)

    def read_all(self) -> dict[str, bytes]:
        """One listing, one batched read."""
        keys = [self.base + n for n in self.names()]
        return {k[len(self.base) :]: v for k, v in self.store.get_many(keys).items()}

    def peek(self) -> dict[str, bytes]:
        return self.read_all()  # nothing to repair: every object is whole

    def names(self) -> builtins.list[str]:
        listed = (k[len(self.base) :] for k in self.store.list(self.base))
        return sorted(n for n in listed if is_record(n))

    def append(self, name: str, data: bytes) -> bytes | None:
        key = self.base + name
        if self.store.create(key, data):
            return None
        existing = self.store.get(key)
        return None if existing == data else existing

    def replace(self, name: str, data: bytes) -> None:
        self.store.put(self.base + name, data)

    def compact(self, names: Iterable[str]) -> None:
        self.store.delete(self.base + n for n in names)
