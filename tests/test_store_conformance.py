"""durable's own stores pass the public store conformance suite
(`durable.testing.store_conformance`): memory, local disk and S3 (moto over
HTTP). Below it, what only these stores have: the local store's own log
beside the object layout, and the object lease's takeover rules."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import segmenter
from durable._storage.base import Store
from durable._storage.keys import INCARNATION, is_record
from durable._storage.objectlease import ObjectLease
from durable._storage.pidspace import pid_space
from durable._storage.recordlog import ObjectRecords
from durable.testing._runs import check_append_is_create_only, check_replace_names_and_compact
from durable.testing.store_conformance import Opener, StoreConformance
from tests.conftest import ROOT, Place, record_base


class TestMemoryStore(StoreConformance):
    shared_across_processes = False

    @pytest.fixture
    def opener(self) -> Opener:
        return functools.partial(durable.open_store, f"memory://conformance-{uuid.uuid4().hex}")


class TestLocalStore(StoreConformance):
    leases_expire = False  # an OS lock, dropped when its holder dies

    @pytest.fixture
    def opener(self, tmp_path: Path) -> Opener:
        return functools.partial(durable.open_store, str(tmp_path / "store"))


class TestS3Store(StoreConformance):
    @pytest.fixture
    def opener(self, s3_url: str) -> Opener:
        # Each client its own s3fs instance and listing cache, as another
        # process would have (the AWS_* variables reach the children).
        return functools.partial(durable.open_store, s3_url, skip_instance_cache=True)


# -- the record log over the store's primitives, beside its own ---------------


def test_the_object_layout_works_over_every_store(place: Place) -> None:
    check_append_is_create_only(lambda: ObjectRecords(place.open(own_client=True), "w", "r"))
    check_replace_names_and_compact(lambda: ObjectRecords(place.open(own_client=True), "w", "x"))


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


def test_get_heads_reads_leading_bytes(place: Place) -> None:
    s = place.open()
    s.put("w/r/obj", b"m2")
    assert s.get_heads(["w/r/obj", "w/r/missing"], 1) == {"w/r/obj": b"m"}


# -- object leases: the takeover rules ----------------------------------------


def plant(store: Store, owner: dict[str, Any], gen: int = 7) -> None:
    store.put(f"w/r/lease/{gen:010d}", json.dumps(owner).encode())


def doc(*, host: str, expires: float, pid: int = 4242, held: float = 30) -> dict[str, Any]:
    return {"host": host, "pid": pid, "token": "t", "since": expires - held, "expires": expires}


# A contender watches a lease of another host that looks expired for two
# thirds of the time it was held for (plus a margin) before taking it over:
# the holders these tests plant held theirs for 1.5 s, not 30.
SHORT = 1.5


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_contenders_for_an_expired_object_lease_one_wins(place: Place) -> None:
    if not place.object_leases:
        pytest.skip("local disk uses flock")
    plant(place.open(), doc(host="elsewhere", expires=time.time() - 1, held=SHORT))
    StoreConformance().test_contenders_in_threads_one_wins(place.open)


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
        "expired holder elsewhere": doc(host="elsewhere", expires=now - 1, held=SHORT),
        "dead process on this host": doc(
            host=socket.gethostname(), expires=now + 60, pid=dead_pid()
        )
        | {"space": pid_space()},  # its pid means this host's process (`pidspace`)
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
        assert "with_options(wait=" in str(err.value)
        return
    lease = s.acquire("w", "r", SHORT)  # garbage says nothing: watched for this TTL's time
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
    # The records of the run's incarnation (`keys.INCARNATION`) are in its folder.
    names = [n.split("/", 1)[1] if n.startswith(INCARNATION) else n for n in names]
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
    # One client of its own looks each time, as a process polling a run
    # would: its view must follow the writer's, with no stale listing.
    reader = place.open(own_client=True)
    expected: dict[str, bytes] = {}
    looks: list[str] = []
    real_delete = writer.delete

    def delete_and_look(keys: Any) -> None:
        # After a segment write, before the objects it covers go: another
        # client reads the run, and sees what it would see at any other time.
        keys = list(keys)
        looks.extend(keys)
        assert reader.peek_records("w", "r") == expected
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
        assert reader.peek_records("w", "r") == expected

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
    base = record_base(store, "seg", "s")
    good = store.peek_records("seg", "s")["steps/00000002"]
    store.put(base + "steps/00000002", good)  # a leftover single that agrees: fine
    assert store.peek_records("seg", "s")["steps/00000002"] == good
    # Sound, but not what the segment holds (another position's record).
    store.put(base + "steps/00000002", store.peek_records("seg", "s")["steps/00000003"])
    for read in (store.peek_records, store.load_records, store.record_names):
        with pytest.raises(durable.CorruptRecordError) as err:
            read("seg", "s")
        assert (err.value.run_id, err.value.position, err.value.key) == ("s", 2, "steps/00000002")
        assert segment in str(err.value)
    with pytest.raises(durable.CorruptRecordError):
        looping(place.open(), counts).run()
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    store.put(base + "steps/00000002", flipped)  # damaged: it says so itself
    with pytest.raises(durable.CorruptRecordError, match="checksum mismatch") as err:
        store.peek_records("seg", "s")
    assert err.value.key == "steps/00000002"
    store.delete([base + "steps/00000002"])  # what the error advises
    # A missing or damaged segment is damage too, never a run with fewer records.
    raw = store.get(base + segment)
    assert raw is not None
    store.put(base + "segments/0000000004-0000000004", raw)
    with pytest.raises(durable.CorruptRecordError, match="a segment is missing"):
        store.peek_records("seg", "s")
    store.delete([base + "segments/0000000004-0000000004"])
    store.put(base + segment, raw[:-5])
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
    assert [s.status for s in history_of(reader, "crashy", "c")[1:]] == ["completed"] * 4

    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["DONE", str(sum(i * 3 for i in range(10)))]
    assert Counter(int(x) for x in log.read_text().split()) == {i: 1 for i in range(10)}
    after = place.open(own_client=True)
    records = after.peek_records("crashy", "c")
    assert {n: records[n] for n in first_four} == before  # the same records, not re-made
    segments, singles = layout(after, "crashy", "c")
    assert len(segments) == 1 and singles == []  # the leftovers went, merged at release
