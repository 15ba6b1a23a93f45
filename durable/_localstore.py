"""The local store: plain files under a folder. Manifests and blobs are
written atomically (temp file, fsync, rename or hard link, fsync of the
folder); operation records are appended to one log per run (`_runlog`); the
run lease is an exclusive flock."""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ._errors import ConfigurationError, StorageError
from ._lease import FileLease, Lease, holder_alive
from ._runlog import LOG_NAME, NOFOLLOW, RunLog, fsync_dir, parse
from ._store import STORE_OPTIONS, Store

T = TypeVar("T")


class LocalStore(Store):
    """Plain files. Writes go to a temp file in the same folder, are fsynced,
    then renamed (or hard-linked for create-only) into place; the folder is
    fsynced too, so a crash leaves either the old object or the new one."""

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
        self._made: set[str] = set()
        self._logs: dict[str, RunLog] = {}

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key)

    def get(self, key: str) -> bytes | None:
        try:
            fd = os.open(self._path(key), os.O_RDONLY | NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:  # a symlink is not an object of this store
                return None
            raise self._error(f"reading {key}", e) from e
        try:
            with os.fdopen(fd, "rb") as f:
                return f.read()
        except OSError as e:
            raise self._error(f"reading {key}", e) from e

    def get_heads(self, keys: builtins.list[str], size: int) -> dict[str, bytes]:
        out = {}
        for key in keys:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError, IsADirectoryError):
                fd = os.open(self._path(key), os.O_RDONLY | NOFOLLOW)
                try:
                    out[key] = os.pread(fd, size, 0)
                finally:
                    os.close(fd)
        return out

    def put(self, key: str, data: bytes) -> None:
        self._write(key, data, exclusive=False)

    def create(self, key: str, data: bytes) -> bool:
        return self._write(key, data, exclusive=True)

    def _write(self, key: str, data: bytes, *, exclusive: bool) -> bool:
        path = self._path(key)
        folder = os.path.dirname(path)
        try:
            fd, tmp = self._in_folder(folder, lambda: tempfile.mkstemp(dir=folder, prefix=".tmp-"))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                if exclusive:
                    try:
                        os.link(tmp, path)
                    except FileExistsError:
                        return False
                else:
                    os.replace(tmp, path)
                    tmp = ""
            finally:
                if tmp:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
            fsync_dir(folder)
            return True
        except OSError as e:
            raise self._error(f"writing {key}", e) from e

    def _in_folder(self, folder: str, op: Callable[[], T]) -> T:
        """Run op, which creates something in folder. Folders this store made
        are remembered, to save a syscall per record; another process (`durable
        rm`, gc) may still delete one, so a missing folder is made again."""
        if folder not in self._made:
            self._make_folder(folder)
            self._made.add(folder)
        try:
            return op()
        except FileNotFoundError:
            self._make_folder(folder)
            return op()

    def _make_folder(self, folder: str) -> None:
        """Make folder and the folders above it up to the root, refusing
        (ELOOP) when one inside the store is a symlink or not a folder:
        nothing is ever written outside the root through a planted link."""
        os.makedirs(self.root, exist_ok=True)
        path = self.root
        for part in self._parts(folder):
            path = os.path.join(path, part)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)
            _real_folder(path)

    def _exists(self, folder: str) -> bool:
        """Whether folder exists with no symlink between it and the root
        (raising ELOOP on one), for deletes and listings."""
        path = self.root
        for part in self._parts(folder):
            path = os.path.join(path, part)
            try:
                _real_folder(path)
            except (FileNotFoundError, NotADirectoryError):
                return False
        return os.path.isdir(self.root)

    def _parts(self, folder: str) -> builtins.list[str]:
        rel = os.path.relpath(folder, self.root)
        if rel == ".":
            return []
        if rel == ".." or rel.startswith(".." + os.sep):
            raise OSError(errno.EXDEV, "outside the store's root", folder)
        return rel.split(os.sep)

    def list(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix.rstrip("/"))
        try:
            if not self._exists(base):
                return []
            return sorted(self._walk(base))
        except OSError as e:
            raise self._error(f"listing {prefix or '/'}", e) from e

    def _walk(self, base: str) -> builtins.list[str]:
        """Every file under base, never following or listing a symlink."""
        out, stack = [], [base]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_symlink() or entry.name.startswith(".tmp-"):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        rel = os.path.relpath(entry.path, self.root)
                        out.append(rel.replace(os.sep, "/"))
        return out

    def delete(self, keys: Iterable[str]) -> None:
        by_folder: dict[str, builtins.list[str]] = {}
        for k in keys:
            path = self._path(k)
            by_folder.setdefault(os.path.dirname(path), []).append(path)
        try:
            for folder, paths in by_folder.items():
                if self._exists(folder):  # never through a symlinked folder
                    for path in paths:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(path)  # a symlink itself, never its target
        except OSError as e:
            raise self._error("deleting", e) from e
        for folder in sorted(by_folder, key=len, reverse=True):
            _prune(folder, self.root)
        self._made.clear()
        self._logs.clear()

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

    def is_held(self, workflow: str, run_id: str) -> bool:
        # Reading the owner document, not trying the flock: a probe that took
        # the lock for an instant could make a real starter fail.
        return holder_alive(self.get(f"{workflow}/{run_id}/lease"), renewed=False)

    def record_names(self, workflow: str, run_id: str) -> builtins.list[str]:
        return sorted(self.peek_records(workflow, run_id))

    def peek_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        # Not RunLog.load(): it cuts a torn tail off, and for a reader without
        # the lease that tail may be the holder's append in progress.
        key = f"{workflow}/{run_id}/{LOG_NAME}"
        return parse(self.get(key) or b"", run_id, path=os.path.join(self.root, key))[0]

    # Operation records live in one append-only log per run (see _runlog).
    def _log(self, workflow: str, run_id: str) -> RunLog:
        key = f"{workflow}/{run_id}"
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = RunLog(self._path(f"{key}/{LOG_NAME}"), run_id)
        return log

    def load_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        try:
            return self._log(workflow, run_id).load()
        except OSError as e:
            raise self._error(f"reading {workflow}/{run_id}/{LOG_NAME}", e) from e

    def save_record(self, workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        # Decided under the log's flock, after catching up with other writers.
        log = self._log(workflow, run_id)
        existing = self._logged(workflow, run_id, lambda: log.create(name, data))
        return None if existing == data else existing

    def replace_record(self, workflow: str, run_id: str, name: str, data: bytes) -> None:
        log = self._log(workflow, run_id)
        self._logged(workflow, run_id, lambda: log.append([(name, data)]))

    def drop_records(self, workflow: str, run_id: str, names: Iterable[str]) -> None:
        items: builtins.list[tuple[str, bytes | None]] = [(n, None) for n in names]
        if not items:
            return
        log = self._log(workflow, run_id)
        self._logged(workflow, run_id, lambda: log.append(items))

    def _logged(self, workflow: str, run_id: str, op: Callable[[], T]) -> T:
        try:
            return self._in_folder(self._path(f"{workflow}/{run_id}"), op)
        except OSError as e:
            raise self._error(f"appending to {workflow}/{run_id}", e) from e

    def lease(self, workflow: str, run_id: str, ttl: float) -> Lease:
        path = self._path(f"{workflow}/{run_id}/lease")
        try:
            return self._in_folder(os.path.dirname(path), lambda: _file_lease(path, ttl, run_id))
        except OSError as e:
            raise self._error(f"taking the lease {path}", e) from e


    def _error(self, what: str, e: OSError) -> StorageError:
        return StorageError(self.url, f"{what}: {e}", _ADVICE.get(e.errno or 0, ""))


# What to do about the local faults a user can fix.
_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space, then call again to resume",
    errno.EDQUOT: "the disk quota is used up: free some space, then call again to resume",
    errno.EROFS: "the file system is read-only: remount it writable or use another folder",
    errno.EFBIG: "a file size limit (ulimit -f) was reached: raise it, then call again",
    errno.EACCES: "check the permissions of the store's folder",
    errno.EPERM: "check the permissions of the store's folder",
    errno.ELOOP: "durable never writes or deletes through a symlink inside a store: remove it",
    errno.ENOTDIR: "a file stands where the store needs a folder: move it away",
}


def _file_lease(path: str, ttl: float, run_id: str) -> FileLease:
    if os.path.islink(path):  # taking it would truncate the link's target
        raise OSError(errno.ELOOP, "the lease is a symlink", path)
    return FileLease(path, ttl, run_id)


def _real_folder(path: str) -> None:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, "a symlink inside the store", path)
    if not stat.S_ISDIR(mode):
        raise OSError(errno.ENOTDIR, "not a folder", path)


def _prune(folder: str, root: str) -> None:
    while folder.startswith(root) and folder != root:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)
