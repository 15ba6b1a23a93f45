"""The local store: plain files under a folder. Manifests and blobs are
written atomically (`localfs`); operation records are appended to one log
per run (`LogRecords` over `log.RunLog`); the run lease is an exclusive OS lock on a file. Nothing
is written or deleted through a symlink below the root."""

from __future__ import annotations

import builtins
import contextlib
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import ConfigurationError, LeaseLostError, StorageError
from . import localfs as fs
from .base import SHARED_BLOBS, STORE_OPTIONS, Store
from .keys import Position, lease_key, run_of
from .lease import FileLease, Lease, holder_alive
from .localerrors import local_error
from .locallevels import RunLevels
from .log import LOG_NAME, NOFOLLOW, RunLog, fsync_dir
from .logrecords import LogRecords

T = TypeVar("T")


# How many times a folder removed under a write is made again before the
# write's error is raised (a remover prunes an emptied run folder at once).
_REMADE = 8


class LocalStore(RunLevels, Store):
    """Plain files; see the module docstring."""

    incarnations = False  # its lock and removed-folder check keep a removed run's writes out

    def __init__(self, root: str, **options: Any) -> None:
        unknown = set(options) - set(STORE_OPTIONS)
        if unknown:
            raise ConfigurationError(
                f"a local store takes no storage options ({', '.join(sorted(unknown))}); "
                f"those are for fsspec URLs. Store options: {', '.join(STORE_OPTIONS)}"
            )
        if "\0" in root:
            raise ConfigurationError(f"invalid store path {root!r}: it contains a NUL byte")
        super().__init__(root, **options)
        self.root = os.path.abspath(os.path.expanduser(root))
        blocked = fs.file_in_the_way(self.root)
        if blocked is not None:
            raise ConfigurationError(
                f"store {root} is not a folder: {blocked} is a file. Give the folder the runs "
                "are kept in (--store, store=, $DURABLE_STORE), or move the file away; nothing "
                "was read or written"
            )
        self._made: set[str] = set()
        # One per run (workflow, run id): a step writes through it.
        self._logs: dict[tuple[str, str], LogRecords] = {}
        # The level of each run's attempt under way (`open_run`), which its
        # manifest writes follow too, to the one that ends it.
        self._levels: dict[tuple[str, str], str] = {}

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key)

    def _error(self, what: str, e: OSError) -> StorageError:
        return local_error(self.url, what, e, self.root)

    # -- primitives ----------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        try:
            return fs.read_bytes(self._path(key))
        except OSError as e:
            raise self._error(f"reading {key}", e) from e

    def get_heads(self, keys: builtins.list[str], size: int) -> dict[str, bytes]:
        out = {}
        for key in keys:
            try:
                with contextlib.suppress(FileNotFoundError, NotADirectoryError, IsADirectoryError):
                    fd = os.open(self._path(key), os.O_RDONLY | NOFOLLOW)
                    try:
                        out[key] = os.pread(fd, size, 0)
                    finally:
                        os.close(fd)
            except OSError as e:  # a refused file is the store's error, never a bare OSError
                raise self._error(f"reading {key}", e) from e
        return out

    def put(self, key: str, data: bytes) -> None:
        self._write(key, data, exclusive=False)

    def create(self, key: str, data: bytes) -> bool:
        return self._write(key, data, exclusive=True) is not None

    def _write(
        self, key: str, data: bytes, *, exclusive: bool, sync: bool | None = None
    ) -> fs.Identity | None:
        path, sync = self._path(key), self.syncs(key) if sync is None else sync
        try:
            return self._in_folder(
                os.path.dirname(path), lambda: fs.write(path, data, exclusive=exclusive, sync=sync)
            )
        except OSError as e:
            raise self._error(f"writing {key}", e) from e

    def _in_folder(self, folder: str, op: Callable[[], T]) -> T:
        """Run op, which creates something in folder. Folders this store made
        are remembered, to save syscalls per record; another process (`durable
        rm`, gc) may still delete one, so a missing folder is made again."""
        remake = folder not in self._made
        for _ in range(_REMADE):
            try:
                if remake:
                    self._make_folder(folder)
                    self._made.add(folder)
                return op()
            except FileNotFoundError:
                # Removed meanwhile, maybe again after we made it: also while
                # making it (a folder made, then removed before it is checked).
                remake = True
        self._make_folder(folder)
        return op()

    def _make_folder(self, folder: str) -> None:
        """`fs.make_folder`, except for a run this store holds: its lease
        file lies in the run's folder, so a missing one was removed (by
        hand) after the lease check, and made again it would hold what a
        removed run wrote after losing its lease. Only folders below it
        are made, one `mkdir` each, failing once it is gone."""
        parts = fs.parts(self.root, folder)
        run = (parts[0], parts[1]) if len(parts) > 1 else None
        sync = self.level_of(run) != "none"  # a run's own once it started (`open_run`)
        if run not in self._held:
            fs.make_folder(self.root, folder, sync=sync)
            return
        path = self._path("/".join(parts[:2]))
        try:
            fs.real_folder(path)
            made = fs.make_below(path, parts[2:])
            if sync:
                fs.synced_into(made)
        except FileNotFoundError:
            self.guard(*parts[:2])
            raise LeaseLostError(parts[1], why="its run folder was removed") from None

    def list(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix.rstrip("/"))
        try:
            found = fs.walk(self.root, base, self._refused) if fs.folder_exists(self.root, base) else []
        except OSError as e:
            raise self._error(f"listing {prefix or '/'}", e) from e
        return sorted(found)

    def _refused(self, folder: str, e: OSError) -> builtins.list[str]:
        """A run's folder this process may not list: its manifest's key
        stands for it, so that the run lists as unreadable (reading that key
        fails the same way) and the listing of the other runs goes on."""
        key = os.path.relpath(folder, self.root).replace(os.sep, "/") + "/run"
        if run_of(key) is None or key.startswith(f"{SHARED_BLOBS[0]}/"):  # no run's folder
            raise e
        return [key]

    def delete(self, keys: Iterable[str]) -> None:
        by_folder: dict[str, builtins.list[str]] = {}
        for k in keys:
            path = self._path(k)
            by_folder.setdefault(os.path.dirname(path), []).append(path)
        # Synced before the next batch (`removal._order`: the manifest first):
        # unsynced, a power loss keeps any of them and undoes any other.
        sync = self.durability != "none"
        try:
            for folder, paths in by_folder.items():
                if fs.folder_exists(self.root, folder):  # never through a symlinked folder
                    for path in paths:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(path)  # a symlink itself, never its target
                    if sync:
                        fsync_dir(folder)
            for folder in sorted(by_folder, key=len, reverse=True):
                fs.prune(folder, self.root, sync=sync)
        except OSError as e:
            raise self._error("deleting", e) from e
        self._made.clear()

    def address(self) -> str:
        return self.root  # absolute: opened again from another folder

    def prune_run(self, workflow: str, run_id: str) -> str | None:
        try:
            return fs.prune(self._path(f"{workflow}/{run_id}"), self.root, sync=self.durability != "none")
        except OSError as e:
            raise self._error("deleting", e) from e

    def sweep_temp(self, older_than: float) -> int:
        # A writer keeps writing to its temp file until the rename, so one
        # untouched for older_than seconds belongs to a process that died.
        cutoff, swept = time.time() - older_than, 0
        for dirpath, _dirs, files in os.walk(self.root):  # never into symlinked folders
            for name in files:
                path = os.path.join(dirpath, name)
                with contextlib.suppress(FileNotFoundError):
                    if name.startswith(".tmp-") and os.lstat(path).st_mtime < cutoff:
                        os.unlink(path)
                        swept += 1
        return swept

    # -- the manifest: one file, compare-and-swap by its identity ------------
    def load_manifest(self, workflow: str, run_id: str) -> bytes | None:
        try:
            found = fs.read(self._path(f"{workflow}/{run_id}/run"))
        except OSError as e:
            raise self._error(f"reading {workflow}/{run_id}/run", e) from e
        self._seen[(workflow, run_id)] = None if found is None else found[1]
        return None if found is None else found[0]

    def peek_manifest(self, workflow: str, run_id: str) -> bytes | None:
        try:
            return fs.read_bytes(self._path(f"{workflow}/{run_id}/run"))
        except OSError as e:
            raise self._error(f"reading {workflow}/{run_id}/run", e) from e

    def save_manifest(self, workflow: str, run_id: str, data: bytes) -> None:
        self.guard(workflow, run_id)
        run, key = (workflow, run_id), f"{workflow}/{run_id}/run"
        # Every write renames a new file into place: a manifest whose identity
        # is not the one read or written here was written by someone else.
        if run in self._seen and fs.current(self._path(key)) != self._seen[run]:
            raise LeaseLostError(run_id, why="another process wrote the run's manifest")
        # Under "none" nothing of the run is synced, its manifest included: a
        # power loss may leave it missing, zeroed or the one before, which
        # its checksum and the identity of every record make an error or a
        # run started over, never a wrong value (tests/test_perf48_power_loss).
        level = self._levels.get(run, self.durability)
        records = self._logs.get(run)
        if records is None or not records.log.held:  # the attempt's last write
            self._levels.pop(run, None)
        self._seen[run] = self._write(key, data, exclusive=False, sync=level != "none")

    def _absent(self) -> Any:
        return None

    def manifest_keys(self, keys: Iterable[str]) -> dict[tuple[str, str], str]:
        return {run: k for k in keys if (run := run_of(k)) is not None}

    # -- operation records: one append-only log per run (`LogRecords`) -------
    def load_sealed(
        self, workflow: str, run_id: str, steps: dict[Position, bytes]
    ) -> dict[str, bytes]:
        return self.records(workflow, run_id).read_all(steps)

    def save_record(self, workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        # Every recorded step: a run holds its log, so `records` (which sets a
        # write outside a run to the store's level) has nothing to do; the
        # lease is checked first all the same (`Store.save_record`).
        records = self._logs.get((workflow, run_id))
        if records is None or not records.log.held:
            return super().save_record(workflow, run_id, name, data)
        self.guard(workflow, run_id)
        return records.append(name, data)

    def records(self, workflow: str, run_id: str) -> LogRecords:
        run = (workflow, run_id)
        records = self._logs.get(run)
        if records is None:
            log = RunLog(self._path(f"{workflow}/{run_id}/{LOG_NAME}"), run_id)
            records = self._logs[run] = LogRecords(self, run, log)
        log = records.log
        if not log.held:  # a write outside a run: the store's own level
            log.syncer.level, log.syncer.interval = self.durability, self.sync_interval
        return records

    # -- the lease ------------------------------------------------------------
    def lease(self, workflow: str, run_id: str, ttl: float) -> Lease:
        path = self._path(lease_key(workflow, run_id))
        try:
            return self._in_folder(os.path.dirname(path), lambda: FileLease(path, ttl, run_id))
        except OSError as e:
            raise self._error(f"taking the lease {path}", e) from e

    def is_held(self, workflow: str, run_id: str) -> bool:
        # Reading the owner document, not trying the lock: a probe that took
        # it for an instant could make a real starter fail.
        return holder_alive(self.get(lease_key(workflow, run_id)), renewed=False)
