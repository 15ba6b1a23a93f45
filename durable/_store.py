"""Where records live. A `Store` speaks of runs, records, blobs and leases;
two implementations sit under it: plain files with atomic writes (the local
default, fast) and fsspec for every other URL (memory://, s3://, ...).
The only module that imports fsspec."""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import os
import tempfile
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

import fsspec

from ._errors import StorageError
from ._lease import FileLease, Lease, ObjectLease, holder_alive
from ._runlog import LOG_NAME, RunLog, parse

DEFAULT_BLOB_THRESHOLD = 1 << 20
_BAD_KEY_CHARS = frozenset("*?[]")


class LeaseHandle(Protocol):
    def release(self) -> None: ...


class Store:
    """Base class: run-level operations over five key-level primitives."""

    url: str
    signing_key: bytes | None
    allow_pickle: bool
    blob_threshold: int

    def __init__(
        self,
        url: str,
        *,
        signing_key: bytes | str | None = None,
        allow_pickle: bool = True,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
    ) -> None:
        self.url = url
        key = signing_key if signing_key is not None else os.environ.get("DURABLE_SIGNING_KEY")
        self.signing_key = key.encode() if isinstance(key, str) else key
        self.allow_pickle = allow_pickle
        self.blob_threshold = blob_threshold

    # -- primitives, keys are relative to the store root ------------------
    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        return {k: v for k in keys if (v := self.get(k)) is not None}

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def create(self, key: str, data: bytes) -> bool:
        """Write only if absent; False when something is already there."""
        raise NotImplementedError

    def list(self, prefix: str) -> builtins.list[str]:
        """Every key under prefix, read fresh (never from a cache)."""
        raise NotImplementedError

    def delete(self, keys: Iterable[str]) -> None:
        raise NotImplementedError

    def lease(self, prefix: str, ttl: float) -> Lease:
        raise NotImplementedError

    # -- runs --------------------------------------------------------------
    def load_manifest(self, workflow: str, run_id: str) -> bytes | None:
        return self.get(f"{workflow}/{run_id}/run")

    def save_manifest(self, workflow: str, run_id: str, data: bytes) -> None:
        self.put(f"{workflow}/{run_id}/run", data)

    def load_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        """All operation records of a run: one listing, one batched read."""
        base = f"{workflow}/{run_id}/"
        keys = [
            k
            for k in self.list(base)
            if k.startswith(
                (base + "steps/", base + "attempts/", base + "timers/", base + "items/")
            )
        ]
        return {k[len(base) :]: v for k, v in self.get_many(keys).items()}

    def save_record(self, workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        """Create-only write. Returns the bytes already there when it lost."""
        key = f"{workflow}/{run_id}/{name}"
        if self.create(key, data):
            return None
        existing = self.get(key)
        return None if existing == data else existing

    def replace_record(self, workflow: str, run_id: str, name: str, data: bytes) -> None:
        self.put(f"{workflow}/{run_id}/{name}", data)

    def drop_records(self, workflow: str, run_id: str, names: Iterable[str]) -> None:
        self.delete(f"{workflow}/{run_id}/{n}" for n in names)

    def put_blob(self, workflow: str, run_id: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.create(f"{workflow}/{run_id}/blobs/{digest}", data)
        return digest

    def get_blob(self, workflow: str, run_id: str, digest: str) -> bytes | None:
        return self.get(f"{workflow}/{run_id}/blobs/{digest}")

    def workflows(self) -> builtins.list[str]:
        return sorted({k.split("/", 1)[0] for k in self.list("") if k.endswith("/run")})

    def runs(self, workflow: str) -> builtins.list[str]:
        keys = self.list(f"{workflow}/")
        return sorted(k.split("/")[1] for k in keys if k.count("/") == 2 and k.endswith("/run"))

    def delete_run(self, workflow: str, run_id: str, *, keep_lease: bool = False) -> None:
        keys = self.list(f"{workflow}/{run_id}/")
        self.delete(k for k in keys if not (keep_lease and k.endswith("/lease")))

    def acquire(self, workflow: str, run_id: str, ttl: float) -> Lease:
        return self.lease(f"{workflow}/{run_id}/lease", ttl)

    def is_held(self, workflow: str, run_id: str) -> bool:
        """Whether a live process holds the run's lease; never takes it."""
        return holder_alive(self.get(f"{workflow}/{run_id}/lease"), renewed=True)

    def record_names(self, workflow: str, run_id: str) -> builtins.list[str]:
        """The names of a run's operation records (`steps/00000003`, ...),
        without reading their values."""
        base = f"{workflow}/{run_id}/"
        kinds = ("steps/", "attempts/", "timers/")
        return [k[len(base) :] for k in self.list(base) if k[len(base) :].startswith(kinds)]

    def peek_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        """`load_records` for readers that do not hold the run's lease
        (listing, history, forking from it): never repairs anything."""
        return self.load_records(workflow, run_id)

    def __repr__(self) -> str:
        return f"<durable store {self.url}>"


class LocalStore(Store):
    """Plain files. Writes go to a temp file in the same folder, are fsynced,
    then renamed (or hard-linked for create-only) into place; the folder is
    fsynced too, so a crash leaves either the old object or the new one."""

    def __init__(self, root: str, **options: Any) -> None:
        super().__init__(root, **options)
        self.root = os.path.abspath(os.path.expanduser(root))
        self._made: set[str] = set()
        self._logs: dict[str, RunLog] = {}

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key)

    def get(self, key: str) -> bytes | None:
        try:
            with open(self._path(key), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise StorageError(self.url, f"reading {key}: {e}") from e

    def put(self, key: str, data: bytes) -> None:
        self._write(key, data, exclusive=False)

    def create(self, key: str, data: bytes) -> bool:
        return self._write(key, data, exclusive=True)

    def _write(self, key: str, data: bytes, *, exclusive: bool) -> bool:
        path = self._path(key)
        folder = os.path.dirname(path)
        try:
            self._ensure(folder)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
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
            _fsync_dir(folder)
            return True
        except OSError as e:
            raise StorageError(self.url, f"writing {key}: {e}") from e

    def _ensure(self, folder: str) -> None:
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)

    def list(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix)
        if not os.path.isdir(base):
            return []
        out = []
        for dirpath, _dirs, files in os.walk(base):
            rel = os.path.relpath(dirpath, self.root)
            for f in files:
                if not f.startswith(".tmp-"):
                    out.append(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/"))
        return sorted(out)

    def delete(self, keys: Iterable[str]) -> None:
        folders = set()
        for k in keys:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(k))
            folders.add(os.path.dirname(self._path(k)))
        for folder in sorted(folders, key=len, reverse=True):
            _prune(folder, self.root)
        self._made.clear()
        self._logs.clear()

    def lease(self, prefix: str, ttl: float) -> Lease:
        path = self._path(prefix)
        self._ensure(os.path.dirname(path))
        return FileLease(path, ttl)

    def is_held(self, workflow: str, run_id: str) -> bool:
        # Reading the owner document, not trying the flock: a probe that took
        # the lock for an instant could make a real starter fail.
        return holder_alive(self.get(f"{workflow}/{run_id}/lease"), renewed=False)

    def record_names(self, workflow: str, run_id: str) -> builtins.list[str]:
        return sorted(self.peek_records(workflow, run_id))

    def peek_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        # Not RunLog.load(): it cuts a torn tail off, and for a reader without
        # the lease that tail may be the holder's append in progress.
        blob = self.get(f"{workflow}/{run_id}/{LOG_NAME}") or b""
        return parse(blob, run_id)[0]

    # Operation records live in one append-only log per run (see _runlog).
    def _log(self, workflow: str, run_id: str) -> RunLog:
        key = f"{workflow}/{run_id}"
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = RunLog(self._path(f"{key}/{LOG_NAME}"), run_id)
        return log

    def load_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        return self._log(workflow, run_id).load()

    def save_record(self, workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        log = self._log(workflow, run_id)
        existing = log.index().get(name)
        if existing is not None:
            return None if existing == data else existing
        self._append(workflow, run_id, [(name, data)])
        return None

    def replace_record(self, workflow: str, run_id: str, name: str, data: bytes) -> None:
        self._append(workflow, run_id, [(name, data)])

    def drop_records(self, workflow: str, run_id: str, names: Iterable[str]) -> None:
        self._append(workflow, run_id, [(n, None) for n in names])

    def _append(
        self, workflow: str, run_id: str, items: builtins.list[tuple[str, bytes | None]]
    ) -> None:
        try:
            self._ensure(self._path(f"{workflow}/{run_id}"))
            self._log(workflow, run_id).append(items)
        except OSError as e:
            raise StorageError(self.url, f"appending to {workflow}/{run_id}: {e}") from e


class FsspecStore(Store):
    """Any fsspec filesystem. Records are written whole with one pipe_file;
    create-only writes use mode="create" (a conditional PUT on S3)."""

    def __init__(self, url: str, **options: Any) -> None:
        own = ("signing_key", "allow_pickle", "blob_threshold")
        store_opts = {k: options.pop(k) for k in own if k in options}
        super().__init__(url, **store_opts)
        try:
            self.fs, root = fsspec.core.url_to_fs(url, **options)
        except (ImportError, ValueError) as e:
            raise StorageError(url, str(e)) from e
        self.root = root.rstrip("/")

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def get(self, key: str) -> bytes | None:
        try:
            return self.fs.cat_file(self._path(key))  # type: ignore[no-any-return]
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StorageError(self.url, f"reading {key}: {e}") from e

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        paths = [self._path(k) for k in keys]
        try:
            got = self.fs.cat(paths, on_error="omit")
        except OSError as e:
            raise StorageError(self.url, f"reading {len(keys)} records: {e}") from e
        return {self._rel(p): v for p, v in got.items()}

    def put(self, key: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(self._path(key), data)
        except OSError as e:
            raise StorageError(self.url, f"writing {key}: {e}") from e

    def create(self, key: str, data: bytes) -> bool:
        try:
            self.fs.pipe_file(self._path(key), data, mode="create")
            return True
        except FileExistsError:
            return False
        except OSError as e:
            raise StorageError(self.url, f"writing {key}: {e}") from e

    def list(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix).rstrip("/")
        self.fs.invalidate_cache(base)
        try:
            found = self.fs.find(base)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise StorageError(self.url, f"listing {prefix}: {e}") from e
        return sorted(self._rel(p) for p in found)

    def _rel(self, path: str) -> str:
        path, root = path.lstrip("/"), self.root.lstrip("/")
        return path[len(root) + 1 :] if root else path

    def delete(self, keys: Iterable[str]) -> None:
        paths = [self._path(k) for k in keys]
        if paths:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(paths)

    def lease(self, prefix: str, ttl: float) -> Lease:
        return ObjectLease(self, prefix, ttl)


def open_store(url: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """Open a store: a local folder or any fsspec URL. The default is
    `$DURABLE_STORE`, else `./.durable`."""
    target = os.fspath(url) if url is not None else os.environ.get("DURABLE_STORE", ".durable")
    if "://" not in target or target.startswith("file://"):
        path = target.removeprefix("file://")
        return LocalStore(path, **options)
    return FsspecStore(target, **options)


def check_key_part(kind: str, value: str) -> str:
    bad = (
        not value
        or "/" in value
        or "\\" in value
        or ".." in value
        or value.startswith(".")
        or any(c.isspace() for c in value)
        or any(c in _BAD_KEY_CHARS for c in value)
    )
    if bad:
        from ._errors import ConfigurationError

        raise ConfigurationError(
            f"invalid {kind} {value!r}: it must be non-empty and contain no '/', '..', "
            "whitespace, or glob characters (* ? [ ])"
        )
    return value


def new_token() -> str:
    return uuid.uuid4().hex


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune(folder: str, root: str) -> None:
    while folder.startswith(root) and folder != root:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def url_filesystem(url: str, store: Store | None = None) -> tuple[Any, str]:
    """The fsspec filesystem and path behind an artifact URL. A store on the
    same protocol lends its filesystem, so the endpoint and credentials it was
    opened with reach the artifact too; other URLs use fsspec's defaults."""
    protocol = url.split("://", 1)[0]
    fs = getattr(store, "fs", None)
    if fs is not None:
        own = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        if protocol in own:
            return fs, fs._strip_protocol(url)
    import fsspec.core  # only the store modules import fsspec

    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as e:
        raise StorageError(url, str(e)) from e
