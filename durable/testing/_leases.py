"""The store conformance suite, part 3: the run lease. One holder at a time,
in threads and in processes; a killed holder's lease is taken over at once,
an expired one (its holder frozen) once it expires; and the holder that
lost its lease writes nothing more (fencing)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .._storage.base import Store
from .._storage.fence import Held
from ..errors import RunLockedError
from ._base import Opener, SuiteBase, posix_only, wait_for
from ._procs import children

FROZEN_TTL = 1.5  # seconds: the lease of the holder the suite freezes


class LeaseChecks(SuiteBase):
    def test_a_second_holder_is_refused_naming_the_first(self, opener: Opener) -> None:
        lease = opener().acquire("w", "r", 30)
        before = time.time()
        with pytest.raises(RunLockedError) as err:
            opener().acquire("w", "r", 30)
        assert err.value.run_id == "r"
        assert err.value.holder == f"pid {os.getpid()} on {socket.gethostname()}"
        assert before - 5 < err.value.since <= before
        assert before + 25 < err.value.expires < before + 31
        assert "with_options(wait=" in str(err.value)
        lease.release()
        opener().acquire("w", "r", 30).release()  # free again, at once

    def test_is_held_probes_without_taking_the_lease(self, opener: Opener) -> None:
        s = opener()
        assert not s.is_held("w", "r")
        lease = s.acquire("w", "r", 30)
        assert opener().is_held("w", "r")
        lease.release()
        assert not opener().is_held("w", "r")
        opener().acquire("w", "r", 30).release()  # the probe took nothing

    def test_contenders_in_threads_one_wins(self, opener: Opener) -> None:
        stores = [opener() for _ in range(6)]
        barrier = threading.Barrier(len(stores))
        won: list[Held] = []
        locked: list[RunLockedError] = []

        def contend(s: Store) -> None:
            barrier.wait()
            try:
                won.append(s.acquire("w", "r", 30))
            except RunLockedError as e:
                locked.append(e)

        threads = [threading.Thread(target=contend, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (len(won), len(locked)) == (1, 5)
        won[0].release()

    def test_contenders_in_processes_one_wins(self, opener: Opener, tmp_path: Path) -> None:
        self.needs_processes()
        with children(opener, tmp_path, 4) as procs:
            for child in procs:
                child.send("acquire", workflow="w", run="r")
            answers = [child.read() for child in procs]
            winners = [c for c, a in zip(procs, answers, strict=True) if a.get("ok")]
            assert len(winners) == 1, answers
            assert sorted(a.get("error", "") for a in answers) == ["", *["RunLockedError"] * 3]
            with pytest.raises(RunLockedError):
                opener().acquire("w", "r", 30)
            assert winners[0].call("release") == {"ok": True}
            opener().acquire("w", "r", 30).release()

    def test_a_killed_holder_is_taken_over_at_once(self, opener: Opener, tmp_path: Path) -> None:
        self.needs_processes()
        posix_only()
        with children(opener, tmp_path, 1) as (child,):
            assert child.call("acquire", workflow="w", run="r") == {"ok": True}
            assert child.call("save_record", workflow="w", run="r", name="steps/00000000",
                              data=b"before".hex()) == {"ok": None}  # fmt: skip
            child.kill()
        store = opener()
        held = store.acquire("w", "r", 30)  # no wait: this host sees the holder is gone
        assert store.load_records("w", "r") == {"steps/00000000": b"before"}
        held.release()

    def test_an_expired_holder_is_taken_over_and_writes_nothing_more(
        self, opener: Opener, tmp_path: Path
    ) -> None:
        self.needs_processes()
        posix_only()
        if not self.leases_expire:
            pytest.skip("the lease is an OS lock: it never expires while its holder lives")
        with children(opener, tmp_path, 1, lease_ttl=FROZEN_TTL) as (child,):
            assert child.call("acquire", workflow="w", run="r") == {"ok": True}
            child.signal(signal.SIGSTOP)  # stalled: alive, but renewing nothing
            store = opener()
            taken: list[Held] = []
            wait_for(lambda: _try_acquire(store, taken))
            record = {"workflow": "w", "run": "r", "data": b"stale".hex()}
            store.save_record("w", "r", "steps/00000000", b"new holder")
            store.save_manifest("w", "r", b"new manifest")
            child.signal(signal.SIGCONT)
            refused: list[dict[str, Any]] = [
                child.call("save_record", name="steps/00000001", **record),
                child.call("save_manifest", **record),
                child.call("put_blob", **record),
            ]
            assert [a.get("error") for a in refused] == ["LeaseLostError"] * 3, refused
            assert opener().load_records("w", "r") == {"steps/00000000": b"new holder"}
            assert opener().load_manifest("w", "r") == b"new manifest"
            assert not [k for k in opener().list("w/r/") if "/blobs/" in k]
            taken[0].release()


def _try_acquire(store: Store, taken: list[Held]) -> bool:
    try:
        taken.append(store.acquire("w", "r", 30))
    except RunLockedError:
        return False
    return True
