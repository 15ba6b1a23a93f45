"""The durability level each write of a local store is made under: a
run's own level while an attempt holds it (`open_run` to `end_run`, its
log held at that level), else the store's. A run's blobs follow it: under "none" nothing of the run is
synced, its outputs over the blob threshold neither (docs/storage.md)."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from ..errors import StorageError
from . import localfs as fs
from .base import SHARED_BLOBS
from .durability import resolve_durability, stronger
from .localerrors import local_error
from .log import LOG_NAME, NOFOLLOW, fsync_dir

if TYPE_CHECKING:
    from .logrecords import LogRecords


class RunLevels:
    """What `LocalStore` decides its syncs by (a mixin: its fields are the store's)."""

    durability: str
    sync_interval: float
    _levels: dict[tuple[str, str], str]
    _logs: dict[tuple[str, str], LogRecords]
    root: str
    url: str

    if TYPE_CHECKING:  # the store's own

        def records(self, workflow: str, run_id: str) -> LogRecords: ...
        def _path(self, key: str) -> str: ...
        def _error(self, what: str, e: OSError) -> StorageError: ...

    def level_of(self, run: tuple[str, str] | None) -> str:
        return self.durability if run is None else self._levels.get(run, self.durability)

    def syncs(self, key: str) -> bool:
        """Whether a write of `key` is synced: a run's blob
        (`<workflow>/<run>/blobs/<sha256>`) as its run's level says; anything
        else as before, always: a cache entry and the cache's blobs answer
        runs of every level (a run under "fsync" recording a hit names the
        cache's blob), and the other objects are markers a removal or a
        cancel relies on."""
        parts = key.split("/")  # the cache's area is "cache/", a name no workflow may have
        if len(parts) != 4 or parts[2] != "blobs" or parts[0] == SHARED_BLOBS[0]:
            return True
        return self.level_of((parts[0], parts[1])) != "none"

    def kept(self, key: str) -> None:
        """A blob a write found already there, whole: an earlier attempt of
        the run may have written it under "none", unsynced; a level that
        syncs syncs it before a record names it (a power loss would take
        it from under a record that level promises)."""
        if not self.syncs(key):
            return
        path = os.path.join(self.root, key)
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(os.path.dirname(path))
        except OSError as e:
            raise local_error(self.url, f"syncing {key}", e) from e

    def run_level(self, asked: str | None = None, caller: str | None = None) -> str:
        if asked is None and caller is not None:  # a child run: its caller's level, as LangGraph's
            return stronger(caller, self.durability)  # subgraphs take theirs, or this store's if it syncs more
        return resolve_durability(asked, self.durability)  # a log synced as asked

    def open_run(self, workflow: str, run_id: str, durability: str | None = None) -> int | None:
        level = self._levels[(workflow, run_id)] = resolve_durability(durability, self.durability)
        self.records(workflow, run_id).log.hold(level, self.sync_interval)
        if level != "none" and self.durability == "none":  # its folders made unsynced: a power
            try:  # loss could take the run's folder with the records synced in it
                fs.synced_into([self._path(workflow), self._path(f"{workflow}/{run_id}")])
                with contextlib.suppress(PermissionError):  # a folder above the store's, unreadable
                    fs.synced_into([self.root])
            except OSError as e:
                raise self._error(f"syncing {workflow}/{run_id}", e) from e
        # A writer killed under "batch" or "none" may have left records no
        # sync covered, which the run is about to note (`noted`).
        if level != "none":
            return self.sync_records(workflow, run_id)
        try:
            return os.stat(self._path(f"{workflow}/{run_id}/{LOG_NAME}")).st_size
        except FileNotFoundError:
            return 0
        except OSError:
            return None  # unknown: nothing more is noted as synced

    def sync_records(self, workflow: str, run_id: str) -> int | None:
        try:
            return self.records(workflow, run_id).log.sync_file()
        except OSError as e:
            raise self._error(f"syncing {workflow}/{run_id}/{LOG_NAME}", e) from e

    def end_run(self, workflow: str, run_id: str) -> int | None:
        records = self._logs.get((workflow, run_id))
        if records is not None:
            try:
                return records.log.release()
            except OSError as e:
                raise self._error(f"syncing {workflow}/{run_id}/{LOG_NAME}", e) from e
        return None
