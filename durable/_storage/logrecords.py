"""The local store's run-record log (`recordlog.RecordLog`): one append-only
file per run (`log.RunLog`), read through up to damage a power loss may have
left past what was synced (`powerloss`, `syncmark`)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import CorruptRecordError
from .keys import Position
from .log import LOG_NAME, UNOPENED, RunLog
from .logcut import short_of
from .logentry import parse
from .powerloss import unsynced_of
from .syncmark import marked

if TYPE_CHECKING:
    from .local import LocalStore

T = TypeVar("T")


class LogRecords:
    """The run-record log as one append-only file: one append and one
    fdatasync a record, where an object per record would cost a file, a
    rename and two fsyncs. Create-only is decided under the log's lock,
    after catching up with other writers."""

    def __init__(self, store: LocalStore, run: tuple[str, str], log: RunLog) -> None:
        self.store, self.run, self.log = store, run, log
        log.fence = lambda: store.guard(*run)
        self.folder = "/".join(run)
        self._path = store._path(self.folder)

    def read_all(self, steps: dict[Position, bytes] | None = None) -> dict[str, bytes]:
        log = self.log
        try:
            synced = marked(log.path)  # before the read: a later mark may cover more
            try:
                records = log.load(steps)
            except CorruptRecordError:  # a power loss's, past what was synced? (`powerloss`)
                unsynced = unsynced_of(self.store, *self.run)
                if unsynced is None:
                    raise
                # raised again where a sync covered it, noted or marked (`syncmark`)
                records = log.load(steps, max(unsynced, synced))
        except OSError as e:
            raise self.store._error(f"reading {self.folder}/{LOG_NAME}", e) from e
        if log.size < synced:  # zeroed or cut short from there on: see `short_of`
            raise short_of(log.run_id, log.path, log.size, synced)
        return records

    def peek(self) -> dict[str, bytes]:
        # Not RunLog.load(): it cuts a torn tail off, and for a reader without
        # the lease that tail may be the holder's append in progress.
        key = f"{self.folder}/{LOG_NAME}"
        path = self.store._path(key)
        synced = marked(path)  # before the read, as in `read_all`
        blob, run_id = self.store.get(key) or b"", self.log.run_id
        try:
            records, intact = parse(blob, run_id, path=path)
        except CorruptRecordError:  # as `read_all`, without cutting anything off
            unsynced = unsynced_of(self.store, *self.run)
            if unsynced is None:
                raise
            records, intact = parse(blob, run_id, path=path, unsynced=max(unsynced, synced))
        if intact < synced:
            raise short_of(run_id, path, intact, synced)
        return records

    def names(self) -> builtins.list[str]:
        return sorted(self.peek())

    def append(self, name: str, data: bytes) -> bytes | None:
        log = self.log
        try:  # a run's record (every step): through the file it holds open
            existing = log.create_open(name, data) if log.held else UNOPENED
        except OSError as e:
            raise self.store._error(f"appending to {self.folder}", e) from e
        if existing is UNOPENED:
            existing = self._logged(log.create, name, data)  # no lambda
        return None if existing is None or existing == data else existing

    def replace(self, name: str, data: bytes) -> None:
        self._logged(lambda: self.log.append([(name, data)]))

    def compact(self, names: Iterable[str]) -> None:
        items: builtins.list[tuple[str, bytes | None]] = [(n, None) for n in names]
        if items:
            self._logged(lambda: self.log.append(items))

    def _logged(self, op: Callable[..., T], *args: Any) -> T:
        try:
            if self.log.is_open():  # a run's log: its folder matters only to open it
                try:
                    return op(*args)
                except FileNotFoundError:  # reopened (the file was deleted): folder gone
                    pass
            return self.store._in_folder(self._path, lambda: op(*args))
        except OSError as e:
            raise self.store._error(f"appending to {self.folder}", e) from e
