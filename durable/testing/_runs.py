"""The store conformance suite, part 2: runs on the store. Manifests are
compare-and-swap, each run's record log is first-writer-wins, blobs are
stored once, and damaged or foreign records are refused, never replayed."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from .._api.decorate import workflow
from .._api.step import step
from .._api.workflow import Workflow
from .._storage.base import Store
from .._storage.recordlog import RecordLog
from ..errors import CorruptRecordError, IntegrityError, LeaseLostError, RunLockedError
from ._base import Opener, SuiteBase

LogOpener = Callable[[], RecordLog]


def pipeline(store: Store, counts: Counter[str]) -> Workflow[Any, Any]:
    """Four counted steps; with fail=True the body raises after them, so the
    run stays open and the next call reads every record."""

    @step(name="work")
    def work(i: int) -> dict[str, int]:
        counts[f"work{i}"] += 1
        return {"i": i, "sq": i * i}

    @workflow(name="conf", store=store, run_id="r1")
    def flow(fail: bool = False) -> list[dict[str, int]]:
        out = [work(i) for i in range(4)]
        if fail:
            raise RuntimeError("after the steps")
        return out

    return flow


def check_append_is_create_only(open_log: LogOpener) -> None:
    log = open_log()
    assert log.read_all() == {} and log.names() == []
    assert log.append("steps/00000000", b"first") is None
    assert log.append("steps/00000000", b"first") is None  # our own retry: ours
    assert log.append("steps/00000000", b"second") == b"first"  # another writer lost
    assert open_log().append("steps/00000000", b"x") == b"first"
    assert log.read_all() == {"steps/00000000": b"first"}


def check_replace_names_and_compact(open_log: LogOpener) -> None:
    log = open_log()
    log.append("steps/00000001", b"one")
    log.replace("attempts/00000002", b"try 1")
    log.replace("attempts/00000002", b"try 2")
    log.append("items/00000003/00000000", b"item 0")
    log.append("items/00000003/00000001", b"item 1")
    log.replace("timers/00000004", b"until")
    assert log.names() == [
        "attempts/00000002", "items/00000003/00000000", "items/00000003/00000001",
        "steps/00000001", "timers/00000004",
    ]  # fmt: skip
    log.compact(["items/00000003/00000000", "items/00000003/00000001"])
    log.compact([])
    everything = {"steps/00000001": b"one", "attempts/00000002": b"try 2", "timers/00000004": b"until"}
    assert log.read_all() == everything
    reader = open_log()
    assert reader.peek() == everything and reader.read_all() == everything


class RunChecks(SuiteBase):
    def test_manifests_list_runs_and_are_compare_and_swap(self, opener: Opener) -> None:
        s = opener()
        s.save_manifest("w", "r", b"m1")
        s.save_manifest("w", "r", b"m2")
        s.save_manifest("w", "other", b"x")
        assert s.load_manifest("w", "r") == b"m2" and s.load_manifest("w", "nope") is None
        assert s.workflows() == ["w"] and s.runs("w") == ["other", "r"]
        # A stale writer (it read m2; another client wrote m3 since) never
        # replaces the newer manifest.
        stale, other = opener(), opener()
        assert stale.load_manifest("w", "r") == b"m2" == other.load_manifest("w", "r")
        other.save_manifest("w", "r", b"m3")
        with pytest.raises(LeaseLostError, match="another process wrote"):
            stale.save_manifest("w", "r", b"stale")
        assert opener().load_manifest("w", "r") == b"m3"
        other.save_manifest("w", "r", b"m4")  # the current writer goes on
        assert opener().load_manifest("w", "r") == b"m4"
        assert stale.load_manifest("w", "new") is None
        other.save_manifest("w", "new", b"n1")  # created after the stale one looked
        with pytest.raises(LeaseLostError):
            stale.save_manifest("w", "new", b"stale")
        assert opener().load_manifest("w", "new") == b"n1"

    def test_record_log_append_is_create_only(self, opener: Opener) -> None:
        check_append_is_create_only(lambda: opener().records("w", "r"))

    def test_record_log_replace_names_and_compact(self, opener: Opener) -> None:
        check_replace_names_and_compact(lambda: opener().records("w", "r"))

    def test_a_stale_second_writer_loses_to_the_first_record(self, opener: Opener) -> None:
        # b reads the run (and may index it) before a writes position 0;
        # b's create-only write must still lose to a's record.
        a, b = opener(), opener()
        assert b.save_record("w", "r", "steps/00000001", b"B1") is None
        assert b.load_records("w", "r") == {"steps/00000001": b"B1"}
        assert a.save_record("w", "r", "steps/00000000", b"A") is None
        assert a.save_record("w", "r", "steps/00000000", b"A") is None  # our retry
        assert b.save_record("w", "r", "steps/00000000", b"B") == b"A"
        assert a.save_record("w", "r", "steps/00000002", b"A2") is None
        assert b.save_record("w", "r", "steps/00000002", b"A2") is None  # the same bytes
        assert opener().load_records("w", "r") == {
            "steps/00000000": b"A", "steps/00000001": b"B1", "steps/00000002": b"A2",
        }  # fmt: skip
        assert opener().record_names("w", "r") == ["steps/00000000", "steps/00000001",
                                                   "steps/00000002"]  # fmt: skip

    def test_racing_record_writers_agree_on_one_winner(self, opener: Opener) -> None:
        stores = [opener() for _ in range(6)]
        for s in stores:
            s.load_records("w", "r")  # every client has read the run before the race
        barrier = threading.Barrier(len(stores))
        answers: list[bytes | None] = [None] * len(stores)

        def write(i: int) -> None:
            barrier.wait()
            answers[i] = stores[i].save_record("w", "r", "steps/00000000", b"w%d" % i)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (winner,) = opener().load_records("w", "r").values()
        assert answers.count(None) == 1 and answers[int(winner[1:])] is None
        assert all(a == winner for a in answers if a is not None)

    def test_delete_run_keeps_the_lease_only_when_asked(self, opener: Opener) -> None:
        s = opener()
        lease = s.acquire("w", "r", 30)
        s.save_record("w", "r", "steps/00000000", b"A")
        s.save_manifest("w", "r", b"m")
        s.delete_run("w", "r", keep_lease=True)
        assert s.load_records("w", "r") == {} and s.load_manifest("w", "r") is None
        with pytest.raises(RunLockedError):
            opener().acquire("w", "r", 30)
        lease.release()
        s.delete_run("w", "r")
        assert s.list("w/r/") == [] and s.runs("w") == []

    def test_blobs_are_stored_once_and_repaired(self, opener: Opener) -> None:
        store = opener()
        data = b"blob" * 1000
        digest = store.put_blob("w", "r", data)
        assert store.put_blob("w", "r", data) == digest
        assert [k for k in store.list("w/r/") if digest in k] == [f"w/r/blobs/{digest}"]
        store.put(f"w/r/blobs/{digest}", data[:10])  # a damaged copy
        assert store.put_blob("w", "r", data) == digest
        assert opener().get_blob("w", "r", digest) == data

    def test_big_identical_outputs_are_stored_once(self, opener: Opener) -> None:
        counts: Counter[str] = Counter()

        @step(name="big")
        def big(tag: str) -> bytes:
            counts[tag] += 1
            return b"x" * 4096

        @workflow(name="blobby", run_id="b")
        def flow() -> list[bytes]:
            return [big("a"), big("b")]

        first = flow.with_options(store=opener(blob_threshold=1024))()
        blobs = [k for k in opener().list("blobby/b/") if "/blobs/" in k]
        assert len(blobs) == 2  # both outputs share one; the result is the other
        again = flow.with_options(store=opener(blob_threshold=1024))()
        assert again == first == [b"x" * 4096] * 2 and counts == {"a": 1, "b": 1}

    def test_a_damaged_record_is_refused_never_replayed(self, opener: Opener) -> None:
        counts: Counter[str] = Counter()
        with pytest.raises(RuntimeError):
            pipeline(opener(), counts)(fail=True)
        store = opener()
        good = store.load_records("conf", "r1")["steps/00000001"]
        flipped = good[:40] + bytes([good[40] ^ 1]) + good[41:]
        for damaged in (good[:-3], good[:20], flipped):
            store.replace_record("conf", "r1", "steps/00000001", damaged)
            with pytest.raises(CorruptRecordError) as err:
                pipeline(opener(), counts)()
            assert (err.value.run_id, err.value.position) == ("r1", 1)
        assert counts == {f"work{i}": 1 for i in range(4)}  # nothing ran again

    def test_a_signed_store_refuses_unsigned_and_foreign_records(self, opener: Opener) -> None:
        counts: Counter[str] = Counter()
        with pytest.raises(RuntimeError):
            pipeline(opener(signing_key="k1"), counts)(fail=True)
        for other in ({}, {"signing_key": "k2"}):
            with pytest.raises(IntegrityError):
                pipeline(opener(**other), counts)()
        assert pipeline(opener(signing_key="k1"), counts).run().steps_replayed == 4
        assert counts == {f"work{i}": 1 for i in range(4)}
