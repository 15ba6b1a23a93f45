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

from .._errortext import warn
from .fence import Held, Owner, reclaim, watched
from .keys import Position, cancel_key, check_names, lease_key, run_prefix
from .storecore import DEFAULT_BLOB_THRESHOLD as DEFAULT_BLOB_THRESHOLD
from .storecore import StoreCore

if TYPE_CHECKING:  # imported where an object store runs them: a local run never loads them
    from .recordlog import RecordLog

# Options every store takes; everything else goes to fsspec.
STORE_OPTIONS = ("signing_key", "allow_pickle", "blob_threshold", "lease_ttl", "durability", "sync_interval")
# The step cache's blobs (see `_cachestore`): a run's record may point at one.
SHARED_BLOBS = ("cache", "shared")


class Store(StoreCore):
    """Run-level operations over the primitive key store a backend implements
    (`StoreCore`): records, blobs, leases held and runs removed."""

    def records(self, workflow: str, run_id: str) -> RecordLog:
        """The run's record log: one object per record unless a backend keeps a log of
        its own (`recordlog.run_records`). Writes go through the methods below (lease checked)."""
        from .recordlog import run_records
        return run_records(self, workflow, run_id)

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
            else:
                self.kept(key)
        return digest

    def kept(self, key: str) -> None:
        """An object a create-only write found there whole: on a store whose
        writes are durable once made (an object store), nothing to do."""

    def get_blob(self, workflow: str, run_id: str, digest: str) -> bytes | None:
        from .recordlog import blob_keys
        data = next((d for k in blob_keys(self, workflow, run_id, digest) if (d := self.get(k)) is not None), None)
        if data is None and (workflow, run_id) != SHARED_BLOBS:
            # A step served from the cache points at the cache's copy; the
            # name is the content's sha256, so it is the same bytes.
            data = self.get_blob(*SHARED_BLOBS, digest)
        return data

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
        stays = self.prune_run(workflow, run_id)
        if stays is not None:  # the run is gone all the same: said, not raised (`durable rm` said "removed" alone)
            warn(f"run {workflow}/{run_id} was removed (its records are gone), but {stays}")

    def prune_run(self, workflow: str, run_id: str) -> str | None:
        """Remove the run's emptied folder, where folders exist; why it
        stays, when the user can fix that (`localfs.prune`), else None."""
        return None

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
            live = getattr(lease, "live_here", 0)  # stopped past its lease (an object store's)
            if holder := getattr(lease, "dead_here", 0) or live:  # its workers' tries end first (`triesgate`)
                from .triesgate import gate_of, wait_for_tries

                wait_for_tries(gate_of(lease, holder), run_id, holder, stopped=bool(live))
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
