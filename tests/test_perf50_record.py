"""The record path of perf50: a local log entry whose data is a CRC
envelope is summed once (the envelope's CRC, continued over the entry's
name: entry magic d7 1f), a log written before that (`tests/data/log_v2`)
still resumes, and each check the shortcuts kept is seen refusing."""

from __future__ import annotations

import importlib.util
import shutil
import threading
from pathlib import Path
from types import ModuleType

import pytest

import durable
from durable._core.recorded import Recorded
from durable._core.spec import _others_may_run
from durable._storage.crc import LARGE
from durable._storage.logentry import encode_entry, locate
from durable._storage.records import StepRecord, seal_record, unseal
from durable.errors import CorruptRecordError

OLD = Path(__file__).parent / "data" / "log_v2"


def _old_flow(where: Path) -> ModuleType:
    """The old log's workflow, from a copy of its folder, as a module of its own."""
    shutil.copytree(OLD, where)
    spec = importlib.util.spec_from_file_location("log_v2_flow", where / "flow.py")  # as made
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_log_written_before_resumes_and_takes_new_entries(tmp_path: Path) -> None:
    module = _old_flow(tmp_path / "old")
    log = tmp_path / "old" / "store" / "flow" / "old" / "records.log"
    before = log.read_bytes()
    assert len(before) == 307 and before.count(b"\xd7\x1e") == 2  # two entries, the old framing
    store = durable.open_store(tmp_path / "old" / "store", durability="none")
    run = module.flow.with_options(store=store).run()
    assert run.value == [{"n": 3, "items": [1, 2.5, None, "x", b"y"]}, [1, 2], 30]
    assert (run.steps_replayed, run.steps_executed, module.ran) == (2, 1, ["last"])
    after = log.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    again = module.flow.with_options(store=store).run()  # completed: its outcome comes back
    assert again.value == run.value and module.ran == ["last"]
    # A large record after them, framed the new way, and all read back.
    store.replace_record("flow", "old", "steps/00000009", seal_record(BODY, None))
    assert log.read_bytes()[len(after) :].count(b"\xd7\x1f") == 1
    records = store.load_records("flow", "old")
    assert records.keys() >= {"steps/00000000", "steps/00000002", "steps/00000009"}
    assert unseal(records["steps/00000009"], None, run_id="old", position=9, name="n") == BODY


def test_a_thread_alive_counts_as_other_code() -> None:
    """`_others_may_run` reads threading's dicts itself: a thread alive
    (besides this one) is seen, as `threading.active_count` sees it."""
    gate = threading.Event()
    thread = threading.Thread(target=gate.wait)
    thread.start()
    try:
        assert _others_may_run()
    finally:
        gate.set()
        thread.join()


BODY = b"\x93\x01\x02\x03" * (LARGE // 4)  # an output large enough to be summed once


def test_an_envelope_entry_is_summed_once_and_checked_whole() -> None:
    """The entry of a CRC envelope carries the envelope's CRC continued
    over its name: a byte flipped anywhere in it (name, envelope head or
    body) is damage on read, told as the log's, where it lies."""
    sealed = seal_record(BODY, None)
    entry = encode_entry("steps/00000001", sealed)
    assert entry[:2] == b"\xd7\x1f" and entry.endswith(sealed)
    spans: dict[str, int] = {}
    assert locate(entry, "r", spans) == len(entry) and list(spans) == ["steps/00000001"]
    for at in [*range(16, 48), len(entry) // 2, len(entry) - 1]:  # name, envelope, body
        bad = bytearray(entry)
        bad[at] ^= 0x04  # "1" becomes "5" in the name: another position, if not summed
        with pytest.raises(CorruptRecordError, match="entry checksum mismatch"):
            locate(bytes(bad), "r", {})


def test_an_envelope_handed_in_damaged_is_refused_on_read() -> None:
    """The entry takes the CRC the envelope carries without summing its
    body: an envelope damaged before it reached the log (its body no longer
    what its CRC says) is refused when the log is read, as before."""
    sealed = seal_record(BODY, None)
    damaged = sealed[:20] + bytes([sealed[20] ^ 1]) + sealed[21:]
    entry = encode_entry("steps/00000001", damaged)
    with pytest.raises(CorruptRecordError, match="entry checksum mismatch"):
        locate(entry, "r", {})
    for data in (seal_record(BODY, b"key"), seal_record(BODY[:99], None)):  # summed whole
        entry = encode_entry("steps/00000001", data)  # (a signed store's, a small record)
        assert entry[:2] == b"\xd7\x1e" and locate(entry, "r", {}) == len(entry)


def test_a_name_damaged_in_the_log_is_refused_not_replayed_elsewhere(tmp_path: Path) -> None:
    """A run of three steps, then one of its record names damaged on disk
    (steps/00000001 made steps/00000005): the resume refuses the log
    rather than replaying that record at another position; nothing ran
    again."""
    ran: list[int] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=durable.open_store(tmp_path / "s"), run_id="r")  # synced: no power loss
    def flow(fail: bool = False) -> int:
        total = sum(work(i) for i in range(3))
        if fail:
            raise RuntimeError("after three steps")
        return total

    with pytest.raises(RuntimeError):
        flow(fail=True)
    log = next((tmp_path / "s").rglob("records.log"))
    raw = bytearray(log.read_bytes())
    at = raw.index(b"steps/00000001") + 13
    raw[at] ^= 0x04
    log.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordError) as err:
        flow()
    assert err.value.run_id == "r" and ran == [0, 1, 2]


def test_a_runs_end_reads_artifacts_of_records_not_reached_too(local_store: durable.Store) -> None:
    """A run's end asks whether any record lists artifacts without a
    Python call a record once all are decoded; while some are not (a
    record the run never reached), those are decoded and asked too."""
    plain = StepRecord(0, "step", "s", "fp", "d", "msgpack", b"\x01")
    listing = StepRecord(1, "step", "s", "fp", "d", "msgpack", b"\x01")
    listing.artifacts = [{"path": "out.csv", "digest": "x"}]
    records = Recorded(local_store, "run")
    records.keep(plain)
    assert records.decoded_all() == {0: plain} and not records.list_artifacts()
    records.keep_sealed(1, seal_record(listing.to_bytes(), None))
    assert records.decoded_all() is None and records.list_artifacts()
    assert records.decoded_all() is not None and records.list_artifacts()  # decoded now
    child = StepRecord(2, "child", "c", "fp", "d", "msgpack", b"\x01")
    child.extra = {"child": {"run_id": "k", "artifacts": True}}
    del records[1]
    records.keep(child)
    assert records.list_artifacts()


def test_a_task_a_step_body_creates_takes_no_position(tmp_path: Path) -> None:
    """A step body runs with no run active but its caller's scope left in
    place (one context variable fewer a step): the task factory asks for
    the active run first, so a task made there is not numbered in the
    body's scope (the run would count a position it never recorded)."""
    import asyncio

    @durable.step(name="spawns")
    async def spawns() -> int:
        return await asyncio.create_task(asyncio.sleep(0, result=5))

    store = durable.open_store(tmp_path / "s", durability="none")

    @durable.workflow(name="spawning", store=store, run_id="r")
    async def flow() -> int:
        return await spawns()

    assert asyncio.run(flow()) == 5
    (info,) = flow.runs()
    assert info.steps == 1 and info.steps_total == 1, info
