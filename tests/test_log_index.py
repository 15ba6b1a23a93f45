"""A resumed run log keeps a body step's record by its position (issue 13:
a resume holds one index entry per record): the mapping from names stays
exact, and create-only still sees every record, its own or another
writer's, another process's included."""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import pytest

import durable
from durable._storage.keys import record_name
from durable._storage.log import RunLog
from durable._storage.logindex import compact, expand, position_of, span_of
from tests.conftest import ROOT

ODD_NAMES = [
    "steps/0000004\N{ARABIC-INDIC DIGIT TWO}",  # int() reads it as 42: not the same name
    "steps/+0000042",
    "steps/ 0000042",
    "steps/000000042",  # nine digits
    "steps/0000042",
    "steps/00000042.00000001",
    "timers/00000042",
    "attempts/00000042",
    "items/00000042/00000001",
    "steps/0000_042",
]


@pytest.mark.parametrize("odd", ODD_NAMES)
def test_only_a_positions_own_record_name_is_kept_by_position(odd: str, tmp_path: Path) -> None:
    path = str(tmp_path / "records.log")
    writer = RunLog(path, "r")
    for name, data in ((record_name(42), b"a"), (record_name(0), b"b"), (odd, b"c")):
        assert writer.create(name, data) is None
    resumed, steps_read = RunLog(path, "r"), {}  # as a resume reads it (`locate`)
    assert resumed.load(steps_read) == {odd: b"c"} and steps_read == {42: b"a", 0: b"b"}
    named, steps = resumed.records, resumed.steps
    assert set(named) == {odd} and position_of(odd) == -1
    assert span_of(steps, record_name(42)) is not None and span_of(steps, odd) is None
    assert span_of(steps, record_name(41)) is None and span_of(steps, record_name(43)) is None
    assert expand(named, steps) == type(steps)("Q")
    assert set(named) == {record_name(42), record_name(0), odd}
    assert RunLog(path, "r").load() == {record_name(42): b"a", record_name(0): b"b", odd: b"c"}


def test_far_positions_and_large_spans_stay_by_name() -> None:
    found = {0: 1, 10**7: 2, 3: 2**64 + 5}
    named, steps = compact({}, dict(found))  # 10**7 is too far: nothing is compacted
    assert named == {record_name(n): at for n, at in found.items()} and not steps
    found.pop(10**7)
    named, steps = compact({}, dict(found))
    assert named == {record_name(3): 2**64 + 5}  # past 4 GiB: does not fit the array
    assert span_of(steps, record_name(0)) == 1


WRITER = """
import sys
from durable._storage.keys import record_name
from durable._storage.log import RunLog
log = RunLog(sys.argv[1], "r")
assert log.create(record_name(5), b"theirs") is None
log.append([(record_name(1), None)])
print("WROTE")
"""


def test_a_resumed_log_is_compacted_and_create_only_sees_every_record(tmp_path: Path) -> None:
    path = str(tmp_path / "records.log")
    first = RunLog(path, "r")
    for n in range(5):
        assert first.create(record_name(n), b"rec%d" % n) is None
    resumed = RunLog(path, "r")
    assert resumed.load() == {record_name(n): b"rec%d" % n for n in range(5)}
    assert resumed.records == {} and len(resumed.steps) == 5  # kept by position
    assert resumed.create(record_name(2), b"late") == b"rec2"  # create-only
    # Another process appends one and deletes one behind the resumed index.
    out = subprocess.run([sys.executable, "-c", WRITER, path], capture_output=True, text=True,
                         cwd=ROOT, check=True)  # fmt: skip
    assert out.stdout.strip() == "WROTE"
    assert resumed.create(record_name(5), b"late") == b"theirs"
    assert resumed.create(record_name(1), b"again") is None  # its deletion is seen
    assert resumed.create(record_name(3), b"late") == b"rec3"
    # The holder's own deletion (a rerun discards records) is exact too.
    again = RunLog(path, "r")
    again.load()
    again.append([(record_name(0), None)])
    assert again.create(record_name(0), b"new") is None
    assert again.create(record_name(4), b"late") == b"rec4"
    expected = {record_name(0): b"new", record_name(1): b"again", record_name(2): b"rec2",
                record_name(3): b"rec3", record_name(4): b"rec4", record_name(5): b"theirs"}  # fmt: skip
    assert RunLog(path, "r").load() == expected


def test_a_resumed_run_that_records_on_keeps_its_index_compact(tmp_path: Path) -> None:
    counts: list[int] = []

    @durable.step(name="s")
    def s(i: int) -> int:
        counts.append(i)
        return i

    store = durable.open_store(tmp_path)

    @durable.workflow(name="w", store=store, run_id="r")
    def flow(n: int) -> int:
        total = sum(s(i) for i in range(n))
        if n < 20:
            durable.suspend("more later")
        return total

    with pytest.raises(durable.Suspended):
        flow(10)
    assert flow.resume("r", n=20).value == sum(range(20))
    assert counts == list(range(20))  # each step ran once
    log = store.records("w", "r").log  # type: ignore[attr-defined]
    assert len(log.steps) == 10 and set(log.records) == {record_name(n) for n in range(10, 20)}


def test_a_replayed_run_holds_under_400_bytes_a_step() -> None:
    """Issue 13's aim: a replayed 10,000-step run holds at most 4 MB."""
    n, held = 10_000, []

    @durable.step(name="trivial")
    def trivial(i: int) -> int:
        return i * 2 + 1

    store = durable.open_store(tempfile.mkdtemp(), durability="none")

    @durable.workflow(name="bench", run_id="b", store=store)
    def flow() -> None:
        sum(trivial(i) for i in range(n))
        if tracemalloc.is_tracing():
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
        durable.suspend("measured")

    for _ in range(2):
        with pytest.raises(durable.Suspended):
            flow()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with pytest.raises(durable.Suspended):
            flow()
    finally:
        tracemalloc.stop()
    assert (held[-1] - base) / n < 400


def test_a_recorded_run_holds_under_560_bytes_a_step() -> None:
    """A recording run keeps each record too: one without failed tries,
    artifacts or extra holds the shared empties a decoded one holds, not
    three containers of its own (664 bytes a step before)."""
    n, held = 10_000, []

    @durable.step(name="trivial")
    def trivial(i: int) -> int:
        return i * 2 + 1

    store = durable.open_store(tempfile.mkdtemp(), durability="none")

    @durable.workflow(name="bench", store=store)
    def flow(k: int) -> None:
        sum(trivial(i) for i in range(n))
        if tracemalloc.is_tracing():
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
        durable.suspend("measured")

    with pytest.raises(durable.Suspended):
        flow(0)  # imports and first-call caches out of the way
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with pytest.raises(durable.Suspended):
            flow(1)  # another run: every step recorded
    finally:
        tracemalloc.stop()
    assert (held[-1] - base) / n < 560
