"""Where records live, in two layers. The primitive key store (`get`,
`get_many`, create-only `create`, `put`, `list`, `delete`) is all a backend
implements; a `Store` speaks of runs above it: manifests, blobs, leases
and each run's record log (`recordlog`: one object per record by default,
one append-only file per run in the local store), every write fenced by the
run's lease (`fence`). Three backends: plain files (`local`), fsspec for
every other URL (`objects`), and a user's own key store (`keystore`, the
protocol `recordlog.KeyStore`); `factory` opens the right one."""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .durability import check_interval, resolve_durability
from .fence import Held, Owner, load_generation, reclaim, save_generation, watched
from .keys import Position, cancel_key, check_names, generation_of, lease_key, run_prefix
from .lease import Lease
from .options import check_store_options, pickles_allowed_by_env, signing_key_of

if TYPE_CHECKING:  # imported where an object store runs them: a local run never loads them
    from .recordlog import RecordLog
    from .segmenter import SegmentWriter

DEFAULT_BLOB_THRESHOLD = 1 << 20
# Options every store takes; everything else goes to fsspec.
STORE_OPTIONS = ("signing_key", "allow_pickle", "blob_threshold", "lease_ttl", "durability", "sync_interval")
# The step cache's blobs (see `_cachestore`): a run's record may point at one.
SHARED_BLOBS = ("cache", "shared")


class Store:
    """Run-level operations over the primitive key store a backend implements."""

    url: str
    signing_key: bytes | None
    allow_pickle: bool
    blob_threshold: int
    lease_ttl: float | None
    incarnations = True  # a new run's records go to a new folder (`keys.INCARNATION`)
    # How often (seconds) a live run looks for its cancel marker: a run pays
    # at most one read per interval, never one per step. DURABLE_CANCEL_POLL
    # overrides it (0: at every operation boundary). A pause looks no more
    # often than the lease is renewed (`renew_every` s), a round trip anyway.
    cancel_poll: float = 0.5
    renew_every: float = 0.0
    sync_interval: float

    @property
    def durability(self) -> str:
        """This store's durability level: its own, else the configured one."""
        return resolve_durability(self._durability)

    def __init__(
        self,
        url: str,
        *,
        signing_key: bytes | str | None = None,
        allow_pickle: bool = True,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        lease_ttl: float | None = None,
        durability: str | None = None,
        sync_interval: float | None = None,
    ) -> None:
        self.url = url
        # When a local run log is fdatasync'ed (`durability`): an object
        # store's every PUT is durable anyway. Kept as given: without one,
        # `configure()` and the environment decide when a run opens.
        self._durability = None if durability is None else resolve_durability(durability)
        self.durability  # noqa: B018  (a bad configured level is refused now, not at the first run)
        self.sync_interval = check_interval(sync_interval)
        check_store_options(allow_pickle, blob_threshold, lease_ttl)
        self.signing_key = signing_key_of(signing_key)
        # The environment can only narrow: DURABLE_ALLOW_PICKLE=0 refuses
        # pickles whatever the code asks for (an operator's policy).
        self.allow_pickle = allow_pickle and pickles_allowed_by_env()
        self.blob_threshold = blob_threshold
        self.lease_ttl = lease_ttl
        # Fencing (`_fence`): the leases handed out, by run, which every write to
        # that run checks; the manifest version each run was last read or written at.
        self._held: dict[tuple[str, str], Held] = {}
        self._seen: dict[tuple[str, str], Any] = {}
        # Each held run's segment writer (`segmenter`), made at the first use of its records.
        self._writers: dict[tuple[str, str], SegmentWriter] = {}
        self._spaces: dict[tuple[str, str], str | None] = {}  # `note_incarnation`

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
        """Write only if absent; False when something else is already there
        (an object store's retried request may find these very bytes: ours)."""
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
    def guard(self, workflow: str, run_id: str, *, now: bool = False) -> None:
        """Before any write to a run: `LeaseLostError` when this store took
        the run's lease and no longer holds it (the one check, see `_fence`);
        `now`: asked of the store, whatever the lease's clocks say (`removal`)."""
        held = self._held.get((workflow, run_id))
        if held is not None:
            held.confirm() if now else held.check()

    def load_manifest(self, workflow: str, run_id: str) -> bytes | None:
        data, self._seen[(workflow, run_id)] = load_generation(self, workflow, run_id)
        if data is None:  # a run made from here on is a new incarnation (`note_incarnation`)
            self.note_incarnation(workflow, run_id, "")
        return data

    def peek_manifest(self, workflow: str, run_id: str) -> bytes | None:
        """`load_manifest` for a reader without the lease: the version read is not noted (a holder's CAS)."""
        return load_generation(self, workflow, run_id)[0]

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

    def records(self, workflow: str, run_id: str) -> RecordLog:
        """The run's record log: one object per record unless a backend keeps a log of
        its own (`recordlog.run_records`). Writes go through the methods below (lease checked)."""
        from .recordlog import run_records
        return run_records(self, workflow, run_id)

    def note_incarnation(self, workflow: str, run_id: str, token: str | None) -> None:
        self._spaces[(workflow, run_id)] = token  # None: unknown; else its manifest's, just seen

    def run_level(self, asked: str | None = None, caller: str | None = None) -> str:
        """The level a run's records are kept at: `asked`, its caller's, this store's (`LocalStore`). Every
        PUT of an object store is durable once it returns, so "fsync" whatever was asked (`noted.note`)."""
        resolve_durability(asked, caller, self.durability)  # a bad level is refused all the same
        return "fsync"

    def open_run(self, workflow: str, run_id: str, durability: str | None = None) -> int | None:
        """A run starts writing records under `durability`: its local log's size, synced first."""
        return None

    def sync_records(self, workflow: str, run_id: str) -> int | None:
        """The run's records durable now, before a note promises them (`noted`): a local log's bytes."""
        return None

    def end_run(self, workflow: str, run_id: str) -> int | None:
        """A run ends, suspends or fails: what it wrote made durable under its level."""
        return None

    def cancel_marked(self, workflow: str, run_id: str, fresh_within: float = 0.0) -> bool:
        """Whether the run's cancel marker is there. The holder's last read of
        its records listed the run's objects, marker included: that answer, if
        at most `fresh_within` seconds old, is used once instead of a read."""
        writer = self._writers.get((workflow, run_id))
        listed = writer.marker_seen(fresh_within) if writer is not None else None
        return listed if listed is not None else self.get(cancel_key(workflow, run_id)) is not None

    def load_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        """All operation records of a run."""
        return self.records(workflow, run_id).read_all()

    def load_sealed(
        self, workflow: str, run_id: str, steps: dict[Position, bytes]
    ) -> dict[str, bytes]:
        """`load_records` as a resume reads them: a store may put the body
        steps' records into `steps`, by position, instead (a local log does)."""
        return self.load_records(workflow, run_id)

    def save_record(self, workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        """Create-only write. Returns the bytes already there when it lost."""
        self.guard(workflow, run_id)
        return self.records(workflow, run_id).append(name, data)

    def replace_record(self, workflow: str, run_id: str, name: str, data: bytes) -> None:
        self.guard(workflow, run_id)
        self.records(workflow, run_id).replace(name, data)

    def drop_records(self, workflow: str, run_id: str, names: Iterable[str]) -> None:
        self.guard(workflow, run_id)
        self.records(workflow, run_id).compact(names)

    def put_blob(
        self,
        workflow: str,
        run_id: str,
        data: bytes,
        claim: Callable[[str], None] | None = None,
    ) -> str:
        """Store data once under its sha256 (`recordlog.blob_key`); return the digest.
        `claim` is told it before the blob exists (a reference listed first)."""
        self.guard(workflow, run_id)
        digest = hashlib.sha256(data).hexdigest()
        if claim is not None:
            claim(digest)
        from .recordlog import blob_key
        key = blob_key(self, workflow, run_id, digest)
        if not self.create(key, data):
            # Already there: the same bytes, unless damaged (failing every replay): repaired.
            existing = self.get(key)
            if existing is None or hashlib.sha256(existing).hexdigest() != digest:
                self.put(key, data)
        return digest

    def get_blob(self, workflow: str, run_id: str, digest: str) -> bytes | None:
        from .recordlog import blob_keys
        data = next((d for k in blob_keys(self, workflow, run_id, digest) if (d := self.get(k)) is not None), None)
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
        prefix, lease = run_prefix(workflow, run_id), lease_key(workflow, run_id)
        keys = [k for k in self.list(prefix) if not (keep_lease and k.startswith(lease))]
        from .removal import remove_fenced
        remove_fenced(self, workflow, run_id, keys)
        self._seen[(workflow, run_id)] = self._absent()
        self.note_incarnation(workflow, run_id, None)
        writer = self._writers.get((workflow, run_id))
        if writer is not None:
            writer.reset()

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

    def acquire(
        self, workflow: str, run_id: str, ttl: float, owner: Owner | None = None, block: bool = True
    ) -> Held:
        """The run's lease (the store's `lease_ttl`, when set, wins), checked by
        every write to the run until released. `owner`: `Held`; `block`: `fence.watched`."""
        check_names(workflow, run_id)
        reclaim(where := (self.url, workflow, run_id))
        run = (workflow, run_id)

        def forget() -> None:
            if self._held.get(run) is held:
                del self._held[run]
                self._writers.pop(run, None)

        def flush() -> None:  # the last single objects into a segment: few reads next time
            writer = self._writers.get(run)
            if writer is not None and self._held.get(run) is held:
                writer.flush(final=True)

        lease = watched(lambda: self.lease(workflow, run_id, self.lease_ttl or ttl), block)
        try:
            held = self._held[run] = Held(lease, forget, flush, owner, where)
        except BaseException:  # a Ctrl-C landing here: nobody else could release it
            lease.release()
            raise
        return held

    def is_held(self, workflow: str, run_id: str) -> bool:
        """Whether a live process holds the run's lease; never takes it."""
        from .objectlease import object_lease_held
        return object_lease_held(self, lease_key(workflow, run_id) + "/")

    def record_names(self, workflow: str, run_id: str) -> builtins.list[str]:
        """The names of a run's operation records (`steps/00000003`, ...)."""
        return self.records(workflow, run_id).names()

    def peek_records(self, workflow: str, run_id: str) -> dict[str, bytes]:
        """`load_records` for readers that do not hold the run's lease
        (listing, history, forking from it): never repairs anything."""
        return self.records(workflow, run_id).peek()

    def sweep_temp(self, older_than: float) -> int:
        """Remove temp files a crashed writer left (untouched for older_than
        seconds); return how many. Object stores leave none."""
        return 0

    def address(self) -> str:
        """Where the store lives, as `open_store` opens it again (a child run's parent's)."""
        return self.url

    def __repr__(self) -> str:
        return f"<durable store {self.url}>"
