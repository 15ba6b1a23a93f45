"""Where records live. A `Store` speaks of runs, records, blobs and leases;
two implementations sit under it: plain files with atomic writes and a log
per run (the local default, in `_localstore`) and fsspec for every other URL
(memory://, s3://, ..., in `_fsstore`)."""

from __future__ import annotations

import builtins
import hashlib
import os
import uuid
from collections.abc import Iterable
from typing import Any

from ._errors import ConfigurationError, StorageError
from ._fence import Held, generation_of, load_generation, save_generation
from ._lease import Lease, object_lease_held

DEFAULT_BLOB_THRESHOLD = 1 << 20
# Options every store takes; everything else goes to fsspec.
STORE_OPTIONS = ("signing_key", "allow_pickle", "blob_threshold", "lease_ttl")
_BAD_KEY_CHARS = frozenset("*?[]")
# The step cache's blobs (see `_cachestore`): a run's record may point at one.
SHARED_BLOBS = ("cache", "shared")


class Store:
    """Base class: run-level operations over five key-level primitives."""

    url: str
    signing_key: bytes | None
    allow_pickle: bool
    blob_threshold: int
    lease_ttl: float | None

    def __init__(
        self,
        url: str,
        *,
        signing_key: bytes | str | None = None,
        allow_pickle: bool = True,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        lease_ttl: float | None = None,
    ) -> None:
        self.url = url
        key = signing_key if signing_key is not None else os.environ.get("DURABLE_SIGNING_KEY")
        self.signing_key = key.encode() if isinstance(key, str) else (key or None)
        # The environment can only narrow: DURABLE_ALLOW_PICKLE=0 refuses
        # pickles whatever the code asks for (an operator's policy).
        self.allow_pickle = allow_pickle and pickles_allowed_by_env()
        self.blob_threshold = blob_threshold
        if lease_ttl is not None and lease_ttl <= 0:
            raise ConfigurationError(
                f"lease_ttl must be a positive number of seconds, not {lease_ttl!r}"
            )
        self.lease_ttl = lease_ttl
        # Fencing (`_fence`): the leases handed out, by run, which every write
        # to that run checks; and the manifest version each run was last
        # read or written at, for its compare-and-swap.
        self._held: dict[tuple[str, str], Held] = {}
        self._seen: dict[tuple[str, str], Any] = {}

    # -- primitives, keys are relative to the store root ------------------
    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]:
        return {k: v for k in keys if (v := self.get(k)) is not None}

    def get_heads(self, keys: builtins.list[str], size: int) -> dict[str, bytes]:
        """Up to `size` leading bytes of each key that exists."""
        return {k: v[:size] for k, v in self.get_many(keys).items()}

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

    def lease(self, workflow: str, run_id: str, ttl: float) -> Lease:
        """Take the run's lease or raise `RunLockedError`."""
        raise NotImplementedError

    # -- runs --------------------------------------------------------------
    def guard(self, workflow: str, run_id: str) -> None:
        """Before any write to a run: `LeaseLostError` when this store took
        the run's lease and no longer holds it (the one check, see `_fence`)."""
        held = self._held.get((workflow, run_id))
        if held is not None:
            held.check()

    def load_manifest(self, workflow: str, run_id: str) -> bytes | None:
        data, self._seen[(workflow, run_id)] = load_generation(self, workflow, run_id)
        return data

    def save_manifest(self, workflow: str, run_id: str, data: bytes) -> None:
        """Compare-and-swap against the version last read or written here."""
        self.guard(workflow, run_id)
        seen = self._seen.get((workflow, run_id))
        self._seen[(workflow, run_id)] = save_generation(self, workflow, run_id, data, seen)

    def manifest_keys(self, keys: Iterable[str]) -> dict[tuple[str, str], str]:
        """The manifest's key of each run among listed keys (workflow, run id)."""
        found: dict[tuple[str, str], tuple[int, str]] = {}
        for key in keys:
            gen = generation_of(key)
            if gen is not None and gen[2] >= found.get(gen[:2], (0, ""))[0]:
                found[gen[:2]] = (gen[2], key)
        return {run: key for run, (_, key) in found.items()}

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
        self.guard(workflow, run_id)
        key = f"{workflow}/{run_id}/{name}"
        if self.create(key, data):
            return None
        existing = self.get(key)
        return None if existing == data else existing

    def replace_record(self, workflow: str, run_id: str, name: str, data: bytes) -> None:
        self.guard(workflow, run_id)
        self.put(f"{workflow}/{run_id}/{name}", data)

    def drop_records(self, workflow: str, run_id: str, names: Iterable[str]) -> None:
        self.guard(workflow, run_id)
        self.delete(f"{workflow}/{run_id}/{n}" for n in names)

    def put_blob(self, workflow: str, run_id: str, data: bytes) -> str:
        """Store data once under its sha256; return the digest."""
        self.guard(workflow, run_id)
        digest = hashlib.sha256(data).hexdigest()
        key = f"{workflow}/{run_id}/blobs/{digest}"
        if not self.create(key, data):
            # Already there: the same bytes, unless that copy was damaged.
            # A damaged blob would fail every later replay, so repair it now.
            existing = self.get(key)
            if existing is None or hashlib.sha256(existing).hexdigest() != digest:
                self.put(key, data)
        return digest

    def get_blob(self, workflow: str, run_id: str, digest: str) -> bytes | None:
        data = self.get(f"{workflow}/{run_id}/blobs/{digest}")
        if data is None and (workflow, run_id) != SHARED_BLOBS:
            # A step served from the cache points at the cache's copy; the
            # name is the content's sha256, so it is the same bytes.
            data = self.get_blob(*SHARED_BLOBS, digest)
        return data

    def workflows(self) -> builtins.list[str]:
        return sorted({w for w, _ in self.manifest_keys(self.list(""))})

    def runs(self, workflow: str) -> builtins.list[str]:
        return sorted(r for _, r in self.manifest_keys(self.list(f"{workflow}/")))

    def delete_run(self, workflow: str, run_id: str, *, keep_lease: bool = False) -> None:
        self.guard(workflow, run_id)
        base = f"{workflow}/{run_id}/"
        keys = self.list(base)
        lease = (base + "lease", base + "lease/")
        self.delete(k for k in keys if not (keep_lease and k.startswith(lease)))
        self._seen[(workflow, run_id)] = self._absent()

    def delete_held_run(self, workflow: str, run_id: str, held: Held) -> None:
        """Remove a run whose lease this store holds: its objects, then the
        lease itself while still held (issue 11, item 2: unlocking first let
        a starter hold a lease on a deleted file while a third locked a new
        one), then what is left of its folder."""
        try:
            self.delete_run(workflow, run_id, keep_lease=True)
        finally:
            held.release(delete=True)
        self.prune_run(workflow, run_id)

    def prune_run(self, workflow: str, run_id: str) -> None:
        """Remove the run's emptied folder, where folders exist."""

    def _absent(self) -> Any:
        """What `_seen` holds for a run without a manifest."""
        return 0

    def acquire(self, workflow: str, run_id: str, ttl: float) -> Held:
        """The run's lease; the store's own `lease_ttl`, when set, wins.
        Until it is released, every write to the run checks it."""
        check_names(workflow, run_id)
        lease = self.lease(workflow, run_id, self.lease_ttl or ttl)
        run = (workflow, run_id)

        def forget() -> None:
            if self._held.get(run) is held:
                del self._held[run]

        held = Held(lease, forget)
        self._held[run] = held
        return held

    def is_held(self, workflow: str, run_id: str) -> bool:
        """Whether a live process holds the run's lease; never takes it."""
        return object_lease_held(self, f"{workflow}/{run_id}/lease/")

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

    def sweep_temp(self, older_than: float) -> int:
        """Remove temp files a crashed writer left (untouched for older_than
        seconds); return how many. Object stores write whole objects and
        leave none."""
        return 0

    def __repr__(self) -> str:
        return f"<durable store {self.url}>"


def open_store(url: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """Open a store: a local folder or any fsspec URL. The default is
    `$DURABLE_STORE`, else `./.durable`.

    Store options: `signing_key` (default `$DURABLE_SIGNING_KEY`): HMAC-sign
    and verify every record; `allow_pickle=False` (or
    `DURABLE_ALLOW_PICKLE=0`, which wins): refuse pickled values;
    `blob_threshold` (bytes, 1 MiB): larger outputs are stored once under
    `blobs/<sha256>`; `lease_ttl` (seconds): how long a dead holder's lease
    on an object store blocks a run. Every other option goes to fsspec, e.g.
    `endpoint_url=`, `key=`, `secret=`, `client_kwargs=` for s3fs."""
    target = os.fspath(url) if url is not None else os.environ.get("DURABLE_STORE", ".durable")
    if "://" not in target or target.startswith("file://"):
        from ._localstore import LocalStore

        return LocalStore(target.removeprefix("file://"), **options)
    from ._fsstore import FsspecStore

    return FsspecStore(target, **options)


# File systems allow 255 bytes a name; room is left for the suffixes a child
# run id adds (`.<position>`).
MAX_KEY_PART = 200


def pickles_allowed_by_env() -> bool:
    flag = os.environ.get("DURABLE_ALLOW_PICKLE", "1").strip().lower()
    return flag not in ("0", "false", "no", "off")


def check_key_part(kind: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(
            f"invalid {kind} {value!r}: it must be a string, not {type(value).__name__}"
        )
    if len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_PART:
        raise ConfigurationError(
            f"invalid {kind} {value[:40]!r}...: it is {len(value)} characters long; at most "
            f"{MAX_KEY_PART} bytes fit in a file or object name. Choose a shorter one."
        )
    bad = (
        not value
        or not value.isprintable()
        or "/" in value
        or "\\" in value
        or ".." in value
        or value.startswith(".")
        or any(c.isspace() for c in value)
        or any(c in _BAD_KEY_CHARS for c in value)
    )
    if bad:
        raise ConfigurationError(
            f"invalid {kind} {value!r}: it must be non-empty and contain no '/', '..', "
            "whitespace, control characters or glob characters (* ? [ ])"
        )
    return value


def check_names(workflow: str, run_id: str) -> None:
    """Both parts of a run's key, for every entry point that takes them: a
    name like `../../other/wf` must never reach another store's run."""
    check_key_part("workflow name", workflow)
    check_key_part("run id", run_id)


def new_token() -> str:
    return uuid.uuid4().hex


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


def __getattr__(name: str) -> Any:
    # `LocalStore` moved to `_localstore` (which imports this module); keep
    # the old import path working without a circular import.
    if name == "LocalStore":
        from ._localstore import LocalStore

        return LocalStore
    raise AttributeError(name)
