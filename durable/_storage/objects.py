"""A store on any fsspec filesystem: s3://, memory://, gcs://, ...

The only module that imports fsspec. Records are written whole with one
`pipe_file` (never streamed through `open("wb")`, which commits partial data
when the `with` body raises); create-only writes use `mode="create"`, a
conditional `If-None-Match: *` PUT on S3. Listings are re-read from the
server every time, since s3fs caches them per process."""

from __future__ import annotations

import builtins
import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import fsspec

from .._errortext import warn
from ..errors import DurableError, StorageError
from .base import STORE_OPTIONS, Store
from .keys import lease_key
from .lease import LEASE_TTL, Lease
from .objecterrors import NO_BUCKET, bucket_gone, cause_text, network_advice
from .objectlease import ObjectLease
from .s3delete import delete_s3

T = TypeVar("T")

# botocore keeps 10 connections per client; a batched read of a run's records
# would queue behind them. Users can still pass their own value.
S3_POOL = 64
_S3 = ("s3", "s3a")
# fsspec's memory:// is one dict shared by every instance, not safe across
# threads (a listing that iterates it while another thread writes fails),
# and it checks then writes for mode="create": every operation on it holds
# this lock, which also makes create-only atomic in one process, all a
# memory store promises. Reentrant: `create` holds it around its write.
_MEMORY_LOCK = threading.RLock()
# Never a workflow name (those cannot start with a dot): probing it lists
# nothing, but fails when the bucket itself is missing or unreachable.
_PROBE = ".durable-probe"
# Filesystems whose create-only write is known to be atomic: a conditional
# PUT on S3, our lock on memory://. Elsewhere fsspec may check, then write.
_ATOMIC_CREATE = frozenset({*_S3, "memory"})
_warned: set[str] = set()
filesystem_class = fsspec.get_filesystem_class  # for the factory's check of a URL's protocol


class FsspecStore(Store):
    """Any fsspec filesystem; see the module docstring."""

    cancel_poll = 2.0  # a round trip to the store: looked at less often

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **{k: options.pop(k) for k in STORE_OPTIONS if k in options})
        self.renew_every = (self.lease_ttl or LEASE_TTL) / 3  # as `ObjectLease` renews
        protocol = fsspec.core.split_protocol(url)[0] or "file"
        self._s3 = protocol in _S3
        self._memory = protocol == "memory"
        if self._s3:
            config = dict(options.get("config_kwargs") or {})
            config.setdefault("max_pool_connections", S3_POOL)
            options["config_kwargs"] = config
        try:
            self.fs, root = fsspec.core.url_to_fs(url, **options)
        except Exception as e:
            raise StorageError(url, f"cannot open it: {cause_text(e)}") from e
        self.root = root.rstrip("/")
        _warn_if_unverified(protocol)
        # s3fs's cat_file asks for the size first (a HEAD per object) unless
        # ranged reads are off; records are small, one GET each is enough.
        self._read: dict[str, Any] = {"max_concurrency": 1} if self._s3 else {}
        self._checked = self._memory

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def _rel(self, path: str) -> str:
        path, root = path.lstrip("/"), self.root.lstrip("/")
        return path[len(root) + 1 :] if root else path

    def _io(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call fs; every failure but a missing or existing object becomes a
        StorageError naming the store, so botocore errors never leak."""
        self._check()
        try:
            if self._memory:
                with _MEMORY_LOCK:
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)
        except FileNotFoundError as e:
            if bucket_gone(e):  # not "no such object": nothing can be read or written
                raise StorageError(self.url, f"{what}: {e}", NO_BUCKET) from e
            raise
        except (FileExistsError, DurableError):
            raise
        except Exception as e:
            raise StorageError(self.url, f"{what}: {cause_text(e)}", network_advice(e, self._s3)) from e

    def _check(self) -> None:
        """Once per store: is the bucket there and reachable with these
        credentials? Run before the first operation, so a misconfigured
        store fails before any step executes."""
        if self._checked:
            return
        try:
            self._probe()
        except FileNotFoundError as e:
            bucket = self.root.lstrip("/").split("/", 1)[0]
            raise StorageError(
                self.url, f"the bucket does not exist: {bucket}", "create it, or fix the URL"
            ) from e
        except Exception as e:
            raise StorageError(self.url, f"cannot use it: {cause_text(e)}", network_advice(e, self._s3)) from e
        self._checked = True

    def _probe(self) -> None:
        if self._s3:  # one request; fsspec's find would make three
            bucket, key, _ = self.fs.split_path(self._path(_PROBE))
            self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=key, MaxKeys=1)
        else:
            self.fs.find(self._path(_PROBE))

    def get(self, key: str) -> bytes | None:
        try:
            data = self._io(f"reading {key}", self.fs.cat_file, self._path(key), **self._read)
        except FileNotFoundError:
            return None
        return bytes(data)

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        """One batched, concurrent `cat` for all keys."""
        if not keys:
            return {}
        paths = [self._path(k) for k in keys]
        got = self._io(
            f"reading {len(keys)} records", self.fs.cat, paths, on_error="return", **self._read
        )
        out: dict[str, bytes] = {}
        for path, value in got.items():
            if isinstance(value, FileNotFoundError) and not bucket_gone(value):
                continue  # deleted since the listing (discarded records)
            if isinstance(value, BaseException):
                # Never drop a record that failed to read: a missing record
                # means "run the step again".
                what = f"reading {self._rel(path)}: {cause_text(value)}"
                advice = NO_BUCKET if bucket_gone(value) else network_advice(value, self._s3)
                raise StorageError(self.url, what, advice)
            out[self._rel(path)] = bytes(value)
        return out

    def get_heads(self, keys: builtins.list[str], size: int) -> dict[str, bytes]:
        """One batched, concurrent ranged read of the first `size` bytes of each key."""
        if not keys:
            return {}
        paths = [self._path(k) for k in keys]
        got = self._io(
            f"reading {len(keys)} manifests", self.fs.cat_ranges, paths, [0] * len(paths),
            [size] * len(paths), on_error="return",
        )  # fmt: skip
        out: dict[str, bytes] = {}
        for key, value in zip(keys, got, strict=True):
            if isinstance(value, FileNotFoundError) and not bucket_gone(value):
                continue  # deleted since the listing
            if isinstance(value, BaseException):
                what = f"reading {key}: {cause_text(value)}"
                raise StorageError(self.url, what, network_advice(value, self._s3))
            out[key] = bytes(value)
        return out

    def put(self, key: str, data: bytes) -> None:
        self._write(key, self.fs.pipe_file, self._path(key), data)

    def _write(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        try:
            self._io(f"writing {key}", fn, *args, **kwargs)
        except FileNotFoundError as e:  # a missing parent: the bucket or its prefix is gone
            raise StorageError(self.url, f"writing {key}: {cause_text(e)}", NO_BUCKET) from e

    def create(self, key: str, data: bytes) -> bool:
        path = self._path(key)
        try:
            if self._memory:
                with _MEMORY_LOCK:
                    self._write(key, self.fs.pipe_file, path, data, mode="create")
            else:
                self._write(key, self.fs.pipe_file, path, data, mode="create")
        except FileExistsError:
            # A create whose first answer was lost (a 500, a reset connection)
            # is sent again by the client and finds its own object: the same
            # bytes (a lease or a manifest generation names its writer).
            return self.get(key) == data
        return True

    def list(self, prefix: str) -> builtins.list[str]:
        base = self._path(prefix).rstrip("/")
        self._forget(base)
        try:
            found = self._io(f"listing {prefix or '/'}", self.fs.find, base)
        except FileNotFoundError:
            return []
        return sorted(self._rel(p) for p in found)

    def _forget(self, base: str) -> None:
        """Drop every cached listing at or under base (s3fs only drops base
        and its parents), so another process's writes are seen."""
        self.fs.invalidate_cache(base)
        cache = getattr(self.fs, "dircache", None)
        if cache is not None:
            inner = base.lstrip("/") + "/"
            for path in [p for p in cache if str(p).lstrip("/").startswith(inner)]:
                cache.pop(path, None)

    def delete(self, keys: Iterable[str]) -> None:
        paths = [self._path(k) for k in keys]
        if not paths:
            return
        what = f"deleting {len(paths)} objects"
        if self._s3:
            try:
                self._io(what, delete_s3, self.fs, paths)
            except FileNotFoundError as e:  # never for a key on S3: the bucket went
                raise StorageError(self.url, f"{what}: {cause_text(e)}", NO_BUCKET) from e
            return
        try:
            self._io(what, self.fs.rm, paths)
        except FileNotFoundError:
            # fsspec refuses the whole list when one of them is missing
            # (memory://): delete the others one by one.
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    self._io(f"deleting {path}", self.fs.rm, path)

    def lease(self, workflow: str, run_id: str, ttl: float) -> Lease:
        return ObjectLease(self, lease_key(workflow, run_id) + "/", ttl, run_id)


def _warn_if_unverified(protocol: str) -> None:
    if protocol in _ATOMIC_CREATE or protocol in _warned:
        return
    _warned.add(protocol)
    warn(
        f"durable has verified atomic create-only writes on s3:// and memory:// only; on "
        f"{protocol}:// the run lease and first-writer-wins records hold only if its "
        "pipe_file(mode='create') is atomic. Run one process per run at a time there.",
    )


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
    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as e:
        raise StorageError(url, str(e)) from e
