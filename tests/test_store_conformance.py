"""One suite, every store: memory, local disk and S3 (moto over HTTP).

Each test gets a `Place`: a store location that can be opened again, as a
second process or machine would, with its own options and (on S3) its own
s3fs client and listing cache."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import segmenter
from durable._storage.base import Store
from durable._storage.keys import is_record
from durable._storage.objectlease import ObjectLease
from durable._storage.recordlog import ObjectRecords, RecordLog
from tests.conftest import ROOT, Place


def pipeline(place_store: Store, counts: Counter[str], *, fail: bool = False) -> Any:
    """Four counted steps; with fail=True the body raises after them, so the
    run stays open and the next call reads every record."""

    @durable.step(name="work")
    def work(i: int) -> dict[str, int]:
        counts[f"work{i}"] += 1
        return {"i": i, "sq": i * i}

    @durable.workflow(name="conf", store=place_store, run_id="r1")
    def flow(fail: bool = False) -> list[dict[str, int]]:
        out = [work(i) for i in range(4)]
        if fail:
            raise RuntimeError("after the steps")
        return out

    return flow


# -- primitives --------------------------------------------------------------


def test_create_only_put_get_list_delete(place: Place) -> None:
    s = place.open()
    assert s.get("w/r/steps/00000001") is None
    assert s.create("w/r/steps/00000001", b"first") is True
    assert s.create("w/r/steps/00000001", b"second") is False
    assert s.get("w/r/steps/00000001") == b"first"
    s.put("w/r/obj", b"m1")
    s.put("w/r/obj", b"m2")
    s.put("w/other/obj", b"x")
    assert s.get("w/r/obj") == b"m2"
    assert s.list("w/r/") == ["w/r/obj", "w/r/steps/00000001"]
    assert s.list("nothing/here/") == []
    assert s.get_many(["w/r/obj", "w/r/missing", "w/other/obj"]) == {
        "w/r/obj": b"m2",
        "w/other/obj": b"x",
    }
    assert s.get_heads(["w/r/obj", "w/r/missing"], 1) == {"w/r/obj": b"m"}
    s.delete(["w/r/obj", "w/r/never-existed"])
    assert s.get("w/r/obj") is None and s.list("w/r/") == ["w/r/steps/00000001"]


def test_manifests_list_runs_and_are_compare_and_swap(place: Place) -> None:
    s = place.open()
    s.save_manifest("w", "r", b"m1")
    s.save_manifest("w", "r", b"m2")
    s.save_manifest("w", "other", b"x")
    assert s.load_manifest("w", "r") == b"m2" and s.load_manifest("w", "nope") is None
    assert s.workflows() == ["w"] and s.runs("w") == ["other", "r"]
    # A stale writer (it read m2; another process wrote m3 since) never
    # replaces the newer manifest, on every backend.
    stale, other = place.open(own_client=True), place.open(own_client=True)
    assert stale.load_manifest("w", "r") == b"m2"
    assert other.load_manifest("w", "r") == b"m2"
    other.save_manifest("w", "r", b"m3")
    with pytest.raises(durable.LeaseLostError, match="another process wrote"):
        stale.save_manifest("w", "r", b"stale")
    assert place.open().load_manifest("w", "r") == b"m3"
    other.save_manifest("w", "r", b"m4")  # the current writer goes on
    assert place.open().load_manifest("w", "r") == b"m4"
    # A run created by someone else after this writer saw none.
    assert stale.load_manifest("w", "new") is None
    other.save_manifest("w", "new", b"n1")
    with pytest.raises(durable.LeaseLostError):
        stale.save_manifest("w", "new", b"stale")
    assert place.open().load_manifest("w", "new") == b"n1"


# -- the run-record log: both implementations, on every place ---------------

LAYOUTS = ["native", "objects"]


def record_log(place: Place, layout: str, **options: Any) -> RecordLog:
    """The store's own log ("native": one append-only file per run on local
    disk, one object per record elsewhere), or one object per record over
    the store's primitives ("objects"), for run w/r."""
    store = place.open(**options)
    return store.records("w", "r") if layout == "native" else ObjectRecords(store, "w", "r")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_record_log_append_is_create_only(place: Place, layout: str) -> None:
    log = record_log(place, layout)
    assert log.read_all() == {} and log.names() == []
    assert log.append("steps/00000000", b"first") is None
    assert log.append("steps/00000000", b"first") is None  # our own retry: ours
    assert log.append("steps/00000000", b"second") == b"first"  # another writer lost
    assert record_log(place, layout, own_client=True).append("steps/00000000", b"x") == b"first"
    assert log.read_all() == {"steps/00000000": b"first"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_record_log_replace_read_all_names_and_compact(place: Place, layout: str) -> None:
    log = record_log(place, layout)
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
    reader = record_log(place, layout, own_client=True)
    assert reader.peek() == everything and reader.read_all() == everything


def test_the_native_log_of_a_store_is_its_run_records(place: Place) -> None:
    store = place.open()
    store.save_record("w", "r", "steps/00000000", b"rec")
    store.save_manifest("w", "r", b"manifest")
    store.put_blob("w", "r", b"blob")
    log = store.records("w", "r")
    assert log.read_all() == store.load_records("w", "r") == {"steps/00000000": b"rec"}
    assert store.record_names("w", "r") == ["steps/00000000"]  # manifest and blobs are not records
    expected = "LogRecords" if place.kind == "local" else "ObjectRecords"
    assert type(log).__name__ == expected


def test_another_client_sees_every_write(place: Place) -> None:
    reader = place.open(own_client=True)
    assert reader.list("w/r/") == []  # lists (and, on S3, caches) before the writes
    writer = place.open(own_client=True)
    for i in range(5):
        writer.save_record("w", "r", f"steps/{i:08d}", b"rec%d" % i)
    got = reader.load_records("w", "r")
    assert got == {f"steps/{i:08d}": b"rec%d" % i for i in range(5)}


def test_save_record_first_writer_wins_and_own_retry_is_ours(place: Place) -> None:
    a, b = place.open(), place.open()
    assert a.save_record("w", "r", "steps/00000000", b"A") is None
    # A retried create of our own bytes (the first attempt's reply was lost).
    assert a.save_record("w", "r", "steps/00000000", b"A") is None
    assert b.save_record("w", "r", "steps/00000000", b"B") == b"A"
    assert place.open().load_records("w", "r") == {"steps/00000000": b"A"}


def test_a_stale_second_writer_loses_to_the_first_record(place: Place) -> None:
    # b reads the run (on local disk: indexes its log) before a writes
    # position 0; b's create-only write must still lose to a's record.
    a, b = place.open(own_client=True), place.open(own_client=True)
    assert b.save_record("w", "r", "steps/00000001", b"B1") is None
    assert b.load_records("w", "r") == {"steps/00000001": b"B1"}
    assert a.save_record("w", "r", "steps/00000000", b"A") is None
    assert b.save_record("w", "r", "steps/00000000", b"B") == b"A"
    assert a.save_record("w", "r", "steps/00000002", b"A2") is None
    assert b.save_record("w", "r", "steps/00000002", b"A2") is None  # the same bytes: ours
    assert place.open().load_records("w", "r") == {
        "steps/00000000": b"A",
        "steps/00000001": b"B1",
        "steps/00000002": b"A2",
    }


def test_racing_create_only_writers_agree_on_one_winner(place: Place) -> None:
    stores = [place.open(own_client=True) for _ in range(6)]
    for s in stores:
        s.load_records("w", "r")  # every index is loaded before the race
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
    (winner,) = place.open().load_records("w", "r").values()
    assert answers.count(None) == 1 and answers[int(winner[1:])] is None
    assert all(a == winner for a in answers if a is not None)


def test_delete_run_keeps_the_lease_only_when_asked(place: Place) -> None:
    s = place.open()
    lease = s.acquire("w", "r", 30)
    s.save_record("w", "r", "steps/00000000", b"A")
    s.put("w/r/run", b"m")
    s.delete_run("w", "r", keep_lease=True)
    assert s.load_records("w", "r") == {} and s.get("w/r/run") is None
    with pytest.raises(durable.RunLockedError):
        place.open().acquire("w", "r", 30)
    lease.release()
    s.delete_run("w", "r")
    assert s.list("w/r/") == []


# -- workflows on every store ------------------------------------------------


def test_run_resume_and_replay_count_every_execution(place: Place) -> None:
    counts: Counter[str] = Counter()
    first = pipeline(place.open(), counts).run()
    assert first.steps_executed == 4 and counts == {f"work{i}": 1 for i in range(4)}
    again = pipeline(place.open(), counts).run()
    assert again.value == first.value and counts == {f"work{i}": 1 for i in range(4)}


def test_write_failure_mid_run_keeps_earlier_records_and_resumes(place: Place) -> None:
    counts: Counter[str] = Counter()
    flaky = place.open()
    real = flaky.save_record
    failed: list[str] = []

    def fail_once_at_2(workflow: str, run_id: str, name: str, data: bytes) -> bytes | None:
        if name == "steps/00000002" and not failed:
            failed.append(name)
            raise durable.StorageError(flaky.url, "injected: the store went away")
        return real(workflow, run_id, name, data)

    flaky.save_record = fail_once_at_2  # type: ignore[method-assign]
    with pytest.raises(durable.StorageError, match="injected"):
        pipeline(flaky, counts).run()
    kept = place.open().load_records("conf", "r1")
    assert sorted(kept) == ["steps/00000000", "steps/00000001"]
    run = pipeline(place.open(), counts).run()
    assert [v["i"] for v in run.value] == [0, 1, 2, 3]
    assert run.steps_replayed == 2 and run.resumed_from_step == 2
    # Step 2 ran twice (its record never landed); no finished step ran again.
    assert counts == {"work0": 1, "work1": 1, "work2": 2, "work3": 1}


def test_big_identical_outputs_are_stored_once_as_blobs(place: Place) -> None:
    counts: Counter[str] = Counter()
    store = place.open(blob_threshold=1024)
    assert place.open().blob_threshold == 1 << 20  # the default: 1 MiB

    @durable.step(name="big")
    def big(tag: str) -> bytes:
        counts[tag] += 1
        return b"x" * 4096

    @durable.step(name="small")
    def small() -> str:
        return "tiny"

    @durable.workflow(name="blobby", store=store, run_id="b")
    def flow() -> list[Any]:
        return [big("a"), big("b"), small()]

    first = flow()
    blobs = [k for k in store.list("blobby/b/") if "/blobs/" in k]
    # Two identical outputs share one object; the result (over the threshold
    # too) is the other.
    assert len(blobs) == 2
    again = flow.with_options(store=place.open(blob_threshold=1024))()
    assert again == first == [b"x" * 4096, b"x" * 4096, "tiny"]
    assert counts == {"a": 1, "b": 1}


def test_put_blob_repairs_a_damaged_copy_under_its_name(place: Place) -> None:
    store = place.open()
    data = b"blob" * 1000
    digest = store.put_blob("w", "r", data)
    assert store.put_blob("w", "r", data) == digest  # stored once
    store.put(f"w/r/blobs/{digest}", data[:10])
    assert store.put_blob("w", "r", data) == digest
    assert store.get_blob("w", "r", digest) == data


# -- integrity on every store ------------------------------------------------


def test_damaged_record_raises_corrupt_record_error(place: Place) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        pipeline(place.open(), counts).run(fail=True)
    store = place.open()
    good = store.load_records("conf", "r1")["steps/00000001"]
    flipped = good[:40] + bytes([good[40] ^ 1]) + good[41:]
    for damaged in (good[:-3], good[:20], flipped):
        store.replace_record("conf", "r1", "steps/00000001", damaged)
        with pytest.raises(durable.CorruptRecordError) as err:
            pipeline(place.open(), counts).run()
        assert (err.value.run_id, err.value.position) == ("r1", 1)
        assert err.value.key == "steps/00000001"
        assert "position 1" in str(err.value)
    assert counts == {f"work{i}": 1 for i in range(4)}  # nothing ran again


def test_signed_store_refuses_unsigned_and_foreign_keys(place: Place) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        pipeline(place.open(signing_key="k1"), counts).run(fail=True)
    for other in ({}, {"signing_key": "k2"}):
        with pytest.raises(durable.IntegrityError):
            pipeline(place.open(**other), counts).run()
    assert pipeline(place.open(signing_key="k1"), counts).run(fail=False).steps_replayed == 4
    assert counts == {f"work{i}": 1 for i in range(4)}


# -- leases ------------------------------------------------------------------


def test_second_holder_gets_run_locked_error_naming_holder_and_expiry(place: Place) -> None:
    lease = place.open().acquire("w", "r", 30)
    before = time.time()
    with pytest.raises(durable.RunLockedError) as err:
        place.open().acquire("w", "r", 30)
    assert err.value.run_id == "r"
    assert err.value.holder == f"pid {os.getpid()} on {socket.gethostname()}"
    assert before - 5 < err.value.since <= before
    assert before + 25 < err.value.expires < before + 31
    assert "with_options(wait=" in str(err.value)
    lease.release()
    place.open().acquire("w", "r", 30).release()  # free again, at once


def test_is_held_probes_without_taking_the_lease(place: Place) -> None:
    s = place.open()
    assert not s.is_held("w", "r")
    lease = s.acquire("w", "r", 30)
    assert place.open().is_held("w", "r")
    lease.release()
    assert not place.open().is_held("w", "r")
    place.open().acquire("w", "r", 30).release()  # the probe took nothing


def test_contenders_for_a_free_lease_exactly_one_wins(place: Place) -> None:
    if place.object_leases:
        plant(place.open(), doc(host="elsewhere", expires=time.time() - 1))
    stores = [place.open() for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    won: list[Any] = []
    locked: list[durable.RunLockedError] = []

    def contend(s: Store) -> None:
        barrier.wait()
        try:
            won.append(s.acquire("w", "r", 30))
        except durable.RunLockedError as e:
            locked.append(e)

    threads = [threading.Thread(target=contend, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(won), len(locked)) == (1, 5)
    won[0].release()


def plant(store: Store, owner: dict[str, Any], gen: int = 7) -> None:
    store.put(f"w/r/lease/{gen:010d}", json.dumps(owner).encode())


def doc(*, host: str, expires: float, pid: int = 4242) -> dict[str, Any]:
    return {"host": host, "pid": pid, "token": "t", "since": expires - 30, "expires": expires}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("who", "free"),
    [
        ("live holder elsewhere", False),
        ("expired holder elsewhere", True),
        ("dead process on this host", True),
        ("released", True),
        ("garbage", True),
    ],
)
def test_object_lease_takeover_rules(place: Place, who: str, free: bool) -> None:
    if not place.object_leases:
        pytest.skip("local disk uses flock; a dead holder is covered in test_store_race")
    now = time.time()
    owner: dict[str, Any] = {
        "live holder elsewhere": doc(host="elsewhere", expires=now + 60),
        "expired holder elsewhere": doc(host="elsewhere", expires=now - 1),
        "dead process on this host": doc(
            host=socket.gethostname(), expires=now + 60, pid=dead_pid()
        ),
        "released": {"released": True, "token": "t"},
        "garbage": {},
    }[who]
    s = place.open()
    plant(s, owner)
    if not free:
        with pytest.raises(durable.RunLockedError) as err:
            s.acquire("w", "r", 30)
        assert err.value.holder == "pid 4242 on elsewhere"
        assert err.value.expires == pytest.approx(now + 60)
        return
    lease = s.acquire("w", "r", 30)
    # The claim is the next generation, and the dead one is cleaned away.
    assert s.list("w/r/lease/") == ["w/r/lease/0000000008"]
    lease.release()


def test_object_lease_renews_in_background_and_notices_takeover(place: Place) -> None:
    if not place.object_leases:
        pytest.skip("flock needs no renewal")
    s = place.open(lease_ttl=1.5)
    lease: Any = s.acquire("w", "r", 30)
    first = lease.generation
    wait_for(lambda: lease.generation > first + 1)  # two renewals
    with pytest.raises(durable.RunLockedError) as err:
        place.open().acquire("w", "r", 30)
    assert err.value.expires > time.time()
    # Someone else claims the next generation (as after a long stall): the
    # holder finds out at its next renewal and stops renewing.
    plant(s, doc(host="elsewhere", expires=time.time() + 60), gen=lease.generation + 1)
    wait_for(lambda: lease.lost)
    lease.release()  # does not touch the new holder's lease
    with pytest.raises(durable.RunLockedError, match="elsewhere"):
        place.open().acquire("w", "r", 30)


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.02)


# -- segments: an object store's records grouped by the lease holder -----------


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment every 3 records, so that a few steps make several."""
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 3)


def layout(store: Store, workflow: str, run_id: str) -> tuple[list[str], list[str]]:
    """(segment names, single record names) of a run as stored."""
    names = [k.split("/", 2)[2] for k in store.list(f"{workflow}/{run_id}/")]
    return [n for n in names if n.startswith("segments/")], [n for n in names if is_record(n)]


def looping(store: Store, counts: Counter[str], stop: int | None = None) -> Any:
    """Seven counted steps, then a loop of five checkpointed items; with stop,
    the body raises before that step."""

    @durable.step(name="work")
    def work(i: int) -> int:
        counts[f"work{i}"] += 1
        return i * 10

    def item(i: int) -> int:
        counts[f"item{i}"] += 1
        return i + 100

    @durable.workflow(name="seg", store=store, run_id="s")
    def flow(stop: int | None = None) -> list[int]:
        out = []
        for i in range(7):
            if i == stop:
                raise RuntimeError(f"stopped before step {i}")
            out.append(work(i))
        return out + durable.loop_over(item, range(5), checkpoint_items=True)

    return flow


@pytest.mark.usefixtures("small_segments")
def test_segments_compaction_then_resume_runs_nothing_twice(place: Place) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError, match="before step 5"):
        looping(place.open(), counts).run(stop=5)
    reader = place.open(own_client=True)
    if place.kind != "local":
        # Released: every record moved into one merged segment, no single left.
        assert layout(reader, "seg", "s") == (["segments/0000000001-0000000002"], [])
    assert reader.record_names("seg", "s") == [f"steps/{i:08d}" for i in range(5)]
    run = looping(place.open(own_client=True), counts).run()
    assert run.value == [0, 10, 20, 30, 40, 50, 60, 100, 101, 102, 103, 104]
    assert (run.steps_replayed, run.steps_executed) == (5, 3)
    assert counts == Counter({**{f"work{i}": 1 for i in range(7)}, **{f"item{i}": 1 for i in range(5)}})
    # The loop's items were dropped once its record was written, segments or not.
    assert place.open().record_names("seg", "s") == [f"steps/{i:08d}" for i in range(8)]
    again = looping(place.open(own_client=True), counts).run()
    assert again.value == run.value and sum(counts.values()) == 12


@pytest.mark.usefixtures("small_segments")
def test_reader_sees_identical_records_before_during_and_after_compaction(place: Place) -> None:
    writer = place.open(own_client=True)
    held = writer.acquire("w", "r", 30)
    expected: dict[str, bytes] = {}
    looks: list[str] = []
    real_delete = writer.delete

    def delete_and_look(keys: Any) -> None:
        # After a segment write, before the objects it covers go: another
        # client reads the run, and sees what it would see at any other time.
        keys = list(keys)
        looks.extend(keys)
        assert place.open(own_client=True).peek_records("w", "r") == expected
        real_delete(keys)

    writer.delete = delete_and_look  # type: ignore[method-assign]

    def write(name: str, data: bytes | None, *, replace: bool = False) -> None:
        if data is None:
            expected.pop(name)
            writer.drop_records("w", "r", [name])
        elif replace:
            expected[name] = data
            writer.replace_record("w", "r", name, data)
        else:
            expected[name] = data
            assert writer.save_record("w", "r", name, data) is None
        assert place.open(own_client=True).peek_records("w", "r") == expected

    for i in range(8):
        write(f"steps/{i:08d}", b"rec%d" % i)
    write("attempts/00000008", b"try 1", replace=True)  # a single object, then moved
    write("steps/00000001", b"rebased", replace=True)  # a name a segment holds
    write("steps/00000007", None)
    write("steps/00000002", None)
    write("steps/00000002", b"again")  # dropped in a segment, then recorded anew
    assert writer.save_record("w", "r", "steps/00000001", b"other") == b"rebased"
    held.release()
    after = place.open(own_client=True)
    assert after.peek_records("w", "r") == after.load_records("w", "r") == expected
    assert after.record_names("w", "r") == sorted(expected)
    if place.kind != "local":
        assert "w/r/steps/00000000" in looks  # the singles went only once a segment held them
        segments, singles = layout(after, "w", "r")
        assert len(segments) == 1 and singles == []  # merged when the lease went


@pytest.mark.usefixtures("small_segments")
def test_a_segment_and_a_single_object_that_disagree_fail_closed(place: Place) -> None:
    if place.kind == "local":
        pytest.skip("segments are an object store's layout")
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        looping(place.open(), counts).run(stop=4)
    store = place.open()
    (segment,), _ = layout(store, "seg", "s")
    good = store.peek_records("seg", "s")["steps/00000002"]
    store.put("seg/s/steps/00000002", good)  # a leftover single that agrees: fine
    assert store.peek_records("seg", "s")["steps/00000002"] == good
    # Sound, but not what the segment holds (another position's record).
    store.put("seg/s/steps/00000002", store.peek_records("seg", "s")["steps/00000003"])
    for read in (store.peek_records, store.load_records, store.record_names):
        with pytest.raises(durable.CorruptRecordError) as err:
            read("seg", "s")
        assert (err.value.run_id, err.value.position, err.value.key) == ("s", 2, "steps/00000002")
        assert segment in str(err.value)
    with pytest.raises(durable.CorruptRecordError):
        looping(place.open(), counts).run()
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    store.put("seg/s/steps/00000002", flipped)  # damaged: it says so itself
    with pytest.raises(durable.CorruptRecordError, match="checksum mismatch") as err:
        store.peek_records("seg", "s")
    assert err.value.key == "steps/00000002"
    store.delete(["seg/s/steps/00000002"])  # what the error advises
    # A missing or damaged segment is damage too, never a run with fewer records.
    raw = store.get(f"seg/s/{segment}")
    assert raw is not None
    store.put("seg/s/segments/0000000004-0000000004", raw)
    with pytest.raises(durable.CorruptRecordError, match="a segment is missing"):
        store.peek_records("seg", "s")
    store.delete(["seg/s/segments/0000000004-0000000004"])
    store.put(f"seg/s/{segment}", raw[:-5])
    with pytest.raises(durable.CorruptRecordError, match="checksum"):
        looping(place.open(), counts).run()
    assert counts == {f"work{i}": 1 for i in range(4)}  # nothing ran again


@pytest.mark.usefixtures("small_segments")
def test_a_holder_that_lost_its_lease_writes_no_segment(place: Place) -> None:
    if not place.object_leases:
        pytest.skip("segments are an object store's layout")
    store = place.open(lease_ttl=1.5)
    lease: Any = store.acquire("w", "r", 30)
    for i in range(2):
        store.save_record("w", "r", f"steps/{i:08d}", b"rec%d" % i)
    plant(store, doc(host="elsewhere", expires=time.time() + 60), gen=lease.generation + 1)
    wait_for(lambda: lease.lost)
    with pytest.raises(durable.LeaseLostError):
        store.save_record("w", "r", "steps/00000002", b"rec2")
    lease.release()  # its flush is fenced: nothing moves
    assert layout(place.open(), "w", "r") == ([], ["steps/00000000", "steps/00000001"])
    # A flush number someone else already used is never overwritten.
    mine = place.open()
    mine.delete(mine.list("w/r/lease/"))
    held = mine.acquire("w", "r", 30)
    assert len(mine.load_records("w", "r")) == 2  # the holder's view: two singles
    mine.put("w/r/segments/0000000001-0000000001", b"theirs")
    with pytest.raises(durable.LeaseLostError, match="another process wrote segment"):
        mine.save_record("w", "r", "steps/00000002", b"rec2")  # the third: a flush
    held.release()
    assert mine.get("w/r/segments/0000000001-0000000001") == b"theirs"
    assert layout(mine, "w", "r")[1] == [f"steps/{i:08d}" for i in range(3)]


def test_segments_are_written_every_k_records_or_once_the_oldest_waited(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    if place.kind == "local":
        pytest.skip("segments are an object store's layout")
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 4)
    store = place.open()
    held = store.acquire("w", "r", 30)
    for i in range(6):
        store.save_record("w", "r", f"steps/{i:08d}", b"rec%d" % i)
    assert layout(store, "w", "r") == (
        ["segments/0000000001-0000000001"], ["steps/00000004", "steps/00000005"]
    )
    monkeypatch.setattr(segmenter, "SEGMENT_INTERVAL", 0.0)  # the oldest waited long enough
    store.save_record("w", "r", "steps/00000006", b"rec6")
    assert layout(store, "w", "r") == (
        ["segments/0000000001-0000000001", "segments/0000000002-0000000002"], []
    )
    held.release()
    assert layout(store, "w", "r") == (["segments/0000000001-0000000002"], [])
    assert place.open().peek_records("w", "r") == {f"steps/{i:08d}": b"rec%d" % i for i in range(7)}


class DictStore(Store):
    """A third-party backend: the primitives over a dict, nothing else."""

    def __init__(self) -> None:
        super().__init__("dict://")
        self.objects: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        return self.objects.get(key)

    def put(self, key: str, data: bytes) -> None:
        self.objects[key] = data

    def create(self, key: str, data: bytes) -> bool:
        with self.lock:
            return self.objects.setdefault(key, data) is data

    def list(self, prefix: str) -> list[str]:
        return sorted(k for k in list(self.objects) if k.startswith(prefix))

    def delete(self, keys: Any) -> None:
        for key in list(keys):
            self.objects.pop(key, None)

    def lease(self, workflow: str, run_id: str, ttl: float) -> Any:
        return ObjectLease(self, f"{workflow}/{run_id}/lease/", ttl, run_id)


@pytest.mark.usefixtures("small_segments")
def test_a_backend_of_primitives_only_gets_segments() -> None:
    counts: Counter[str] = Counter()
    store = DictStore()
    with pytest.raises(RuntimeError):
        looping(store, counts).run(stop=5)
    assert layout(store, "seg", "s") == (["segments/0000000001-0000000002"], [])
    run = looping(store, counts).run()
    assert (run.steps_replayed, run.steps_executed) == (5, 3)
    assert sum(counts.values()) == 12  # 7 steps and 5 items, each once


def history_of(store: Store, workflow: str, run_id: str) -> list[durable.StepInfo]:
    @durable.workflow(name=workflow, store=store)
    def reader() -> None: ...

    return reader.history(run_id)


@pytest.mark.usefixtures("small_segments")
def test_history_runs_fork_and_gc_see_a_segmented_run(place: Place) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        looping(place.open(), counts).run(stop=5)
    store = place.open(own_client=True)
    steps = history_of(store, "seg", "s")
    assert [(s.position, s.status, s.preview) for s in steps[1:6]] == [  # after the "initial" entry
        (i, "completed", str(i * 10)) for i in range(5)
    ]
    (info,) = looping(store, counts).runs()
    assert (info.steps, info.position) == (5, 5)
    forked = looping(store, counts).fork("s", at=3, new_run_id="f", stop=None)
    assert forked.value[:7] == [0, 10, 20, 30, 40, 50, 60]
    assert (forked.steps_replayed, forked.steps_executed) == (3, 5)
    # The fork ran 3..6 and the loop; the source kept its records.
    assert counts == Counter(
        {"work0": 1, "work1": 1, "work2": 1, "work3": 2, "work4": 2, "work5": 1, "work6": 1}
        | {f"item{i}": 1 for i in range(5)}
    )
    assert place.open().record_names("seg", "s") == [f"steps/{i:08d}" for i in range(5)]
    removed = durable.gc(place.open(), workflow="seg", status="failed")
    assert [r.run_id for r in removed] == ["s"]
    assert place.open().list("seg/s/") == []  # segments included


CRASH_SCRIPT = """
import os, sys
import durable
from durable._storage import segmenter

segmenter.SEGMENT_RECORDS = 4
store = durable.open_store(os.environ["STORE_URL"])
real_delete = store.delete

def delete(keys):
    keys = list(keys)
    if os.environ.get("HOLD") and any("/steps/" in k for k in keys):
        # Segment 1 is written; the single objects it covers are still there.
        print("SEGMENTED", flush=True)
        sys.stdin.readline()
    real_delete(keys)

store.delete = delete

@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    return i * 3

@durable.workflow(name="crashy", store=store, run_id="c")
def flow() -> list:
    return [work(i) for i in range(10)]

print("DONE", sum(flow()), flush=True)
"""


@pytest.mark.slow
def test_kill_9_between_segment_write_and_single_removal_leaves_a_readable_run(
    s3_url: str, tmp_path: Path
) -> None:
    place = Place("s3", s3_url)
    script, log = tmp_path / "crashy.py", tmp_path / "executions.log"
    script.write_text(CRASH_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), STORE_URL=s3_url, COUNT_LOG=str(log))
    child = subprocess.Popen(
        [sys.executable, str(script)], env=dict(env, HOLD="1"), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "SEGMENTED"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    child.stdout.close()
    child.stdin.close()

    reader = place.open(own_client=True)
    first_four = [f"steps/{i:08d}" for i in range(4)]
    # Both copies are there, and they agree: the run reads as four records.
    assert layout(reader, "crashy", "c") == (["segments/0000000001-0000000001"], first_four)
    before = reader.peek_records("crashy", "c")
    assert sorted(before) == first_four
    assert [s.status for s in history_of(reader, "crashy", "c")] == ["completed"] * 4

    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["DONE", str(sum(i * 3 for i in range(10)))]
    assert Counter(int(x) for x in log.read_text().split()) == {i: 1 for i in range(10)}
    after = place.open(own_client=True)
    records = after.peek_records("crashy", "c")
    assert {n: records[n] for n in first_four} == before  # the same records, not re-made
    segments, singles = layout(after, "crashy", "c")
    assert len(segments) == 1 and singles == []  # the leftovers went, merged at release
