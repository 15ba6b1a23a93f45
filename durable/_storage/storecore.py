"""The first layer of a store (`base`): the primitive key store a backend
implements (`get`, `get_many`, create-only `create`, `put`, `list`,
`delete`, `lease`), the options every store takes, each run's manifest (a
compare-and-swap of generations, `fence`) and the check of its lease that
every write makes; what a run's life asks of the backend (opened, synced,
ended: a local log's, `local`)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .durability import check_interval, resolve_durability
from .fence import Held, load_generation, save_generation
from .keys import generation_of
from .lease import Lease
from .options import check_store_options, pickles_allowed_by_env, signing_key_of

if TYPE_CHECKING:  # imported where an object store runs them: a local run never loads them
    from .segmenter import SegmentWriter

DEFAULT_BLOB_THRESHOLD = 1 << 20


class StoreCore:
    """The primitive key store a backend implements, the options every
    store takes, and each run's manifest and lease check (`Store` adds the
    rest of a run)."""

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

    def workflows(self) -> builtins.list[str]:
        return sorted({w for w, _ in self.manifest_keys(self.list(""))})

    def runs(self, workflow: str) -> builtins.list[str]:
        return sorted(r for _, r in self.manifest_keys(self.list(f"{workflow}/")))

    def sweep_temp(self, older_than: float) -> int:
        """Remove temp files a crashed writer left (untouched for older_than
        seconds); return how many. Object stores leave none."""
        return 0

    def address(self) -> str:
        """Where the store lives, as `open_store` opens it again (a child run's parent's)."""
        return self.url

    def __repr__(self) -> str:
        return f"<durable store {self.url}>"
