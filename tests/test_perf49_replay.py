"""perf49: a replayed step's record is compared as the row it was stored as,
its output alone decoded (`replayrow.replayed`), and its envelope checked
once (`Recorded.row` keeps the checked body for a later `get`). Every field
the shortcut reads is forged here in a record written whole, and the replay
must do what the full path (`replay.lookup`, `loadback.load_value`) does
with it: refuse it, or run the step again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core import recorded
from durable._storage.codec import pack, unpack
from durable._storage.keys import PositionPath
from durable._storage.noted import note
from durable._storage.records import PICKLE, StepRecord, seal_record
from durable.errors import CorruptRecordError, DefinitionChangedError, NondeterminismError

RAN: list[int] = []


@durable.step(name="twice")
def twice(x: int) -> int:
    RAN.append(x)
    return 2 * x


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


def _flow(tmp_path: Path, durability: str = "batch") -> Any:
    def body(done: int = 0) -> int:
        total = twice(1) + twice(2) + twice(3)
        if not done:
            durable.suspend("later")
        return total

    store = durable.open_store(tmp_path / "s", durability=durability)
    flow = durable.workflow(store=store, run_id="r", name="perf49")(body)
    with pytest.raises(durable.Suspended):
        flow()
    assert RAN == [1, 2, 3]
    return flow


def _sealed(tmp_path: Path) -> dict[Any, bytes]:
    found: dict[Any, bytes] = {}
    named = durable.open_store(tmp_path / "s").load_sealed("perf49", "r", found)
    return {**found, **{int(k.split("/")[1]): v for k, v in named.items() if k.startswith("steps/")}}


def _forge(tmp_path: Path, change: Callable[[list[Any]], None], at: int = 1) -> None:
    """Record `at` rewritten whole (a good envelope and log entry) with its row changed."""
    row = unpack(_sealed(tmp_path)[at][9:])  # the CRC envelope's body
    change(row)
    store = durable.open_store(tmp_path / "s")
    store.replace_record("perf49", "r", f"steps/{at:08d}", seal_record(pack(row), None))


def test_an_intact_run_replays_without_running_a_step(tmp_path: Path) -> None:
    flow = _flow(tmp_path)
    run = flow.resume("r", done=1)
    assert (run.value, run.steps_replayed, RAN) == (12, 3, [1, 2, 3])


@pytest.mark.parametrize("durability", ["fsync", "batch", "none"])
def test_a_replay_makes_no_record_at_any_level(
    tmp_path: Path, durability: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under "fsync" and "batch" each record carries its attempt's mark (`noted.carry`).
    flow = _flow(tmp_path, durability)
    made: list[bytes] = []
    real = StepRecord.from_bytes

    def counted(body: bytes, *, interned: bool = True) -> StepRecord:
        made.append(body)
        return real(body, interned=interned)

    monkeypatch.setattr(StepRecord, "from_bytes", counted)
    with pytest.raises(durable.Suspended):
        flow.resume("r")  # suspends again: nothing reads every record at its end
    assert made == [] and RAN == [1, 2, 3]


def _unkept(digest: str | None) -> Callable[[list[Any]], None]:
    """A record keeping a digest (perf53: one of a call of numbers keeps its bytes)."""

    def change(row: list[Any]) -> None:
        row[5], row[15] = digest, None

    return change


def _set(i: int, value: Any) -> Callable[[list[Any]], None]:
    def change(row: list[Any]) -> None:
        row[i] = value

    return change


# Each field `replayed` compares, forged: the refusal the full path gives.
@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (_set(3, "other"), NondeterminismError, "other"),  # the step's name
        (_set(2, 5), CorruptRecordError, "undecodable"),  # its kind
        (_set(4, "f" * 64), DefinitionChangedError, "code changed"),  # its fingerprint
        (_set(15, b"A1:s1:xi9;"), DefinitionChangedError, "argument"),  # its argument bytes
        (_set(5, "0" * 32), CorruptRecordError, "undecodable"),  # a digest beside them
        (_unkept("0" * 32), DefinitionChangedError, "argument"),  # its argument digest
        (_unkept(None), DefinitionChangedError, "twice"),  # recorded without a digest
        (_set(14, {"in_place": True}), DefinitionChangedError, "twice"),  # changed its argument
        (_set(14, {"noted": 1, "in_place": True}), DefinitionChangedError, "twice"),  # and marked
        (_set(8, "ab" * 32), CorruptRecordError, "blob"),  # its output is a blob
        (_set(6, PICKLE), CorruptRecordError, "pickle|allow_pickle|value"),  # not plain data
        (_set(7, None), CorruptRecordError, "no value"),  # no output kept
        (_set(12, [1]), CorruptRecordError, "undecodable"),  # failed tries
        (_set(0, 3), CorruptRecordError, "undecodable"),  # another record format
        (_set(1, 2), CorruptRecordError, "position 2"),  # a record moved here
    ],
)
def test_a_forged_field_is_decided_as_the_full_path_decides(
    tmp_path: Path, change: Callable[[list[Any]], None], error: type[Exception], match: str
) -> None:
    flow = _flow(tmp_path)
    _forge(tmp_path, change)
    with pytest.raises(error, match=match):
        flow.resume("r")  # it would suspend again: no end of run reads every record
    assert RAN == [1, 2, 3]  # nothing ran again


def test_a_step_whose_artifact_is_gone_runs_again(tmp_path: Path) -> None:
    flow = _flow(tmp_path)
    gone = {"url": str(tmp_path / "gone.txt"), "kind": "file", "size": 1, "mtime": 1.0}
    _forge(tmp_path, _set(13, [gone]))
    assert flow.resume("r", done=1).value == 12
    assert RAN == [1, 2, 3, 2, 3]  # it and every step after it


def test_a_step_not_persisted_runs_again(tmp_path: Path) -> None:
    flow = _flow(tmp_path)
    _forge(tmp_path, _set(9, False))  # a persist=False marker: its step runs again
    assert flow.resume("r", done=1).value == 12
    assert RAN == [1, 2, 3, 2]


def test_a_record_sealed_bad_but_logged_whole_is_refused(tmp_path: Path) -> None:
    # The log entry's CRC covers the bytes as written; the envelope's, the
    # bytes as sealed: a damaged record written whole fails only the second.
    flow = _flow(tmp_path)
    sealed = bytearray(_sealed(tmp_path)[1])
    sealed[sealed.index(b"\xc4\x01\x04") + 2] ^= 0x01  # its output, 4, made 5
    store = durable.open_store(tmp_path / "s")
    store.replace_record("perf49", "r", "steps/00000001", bytes(sealed))
    with pytest.raises(CorruptRecordError, match="checksum"):
        flow.resume("r", done=1)
    assert RAN == [1, 2, 3]


def test_a_flipped_byte_in_the_log_is_refused(tmp_path: Path) -> None:
    flow = _flow(tmp_path, durability="fsync")  # synced: not a power loss's damage
    log = tmp_path / "s" / "perf49" / "r" / "records.log"
    data = bytearray(log.read_bytes())
    data[data.index(b"\xc4\x01\x04", data.index(b"steps/00000001")) + 2] ^= 0x01  # 4 made 5
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="checksum"):
        flow.resume("r", done=1)
    assert RAN == [1, 2, 3]


def test_each_envelope_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = _flow(tmp_path)
    checked: list[bytes] = []
    real = recorded.intact_body

    def counted(data: bytes, key: bytes | None) -> bytes | None:
        checked.append(data)
        return real(data, key)

    monkeypatch.setattr(recorded, "intact_body", counted)
    # Completed: the run reads every record again at its end (its plan, its artifacts).
    assert flow.resume("r", done=1).value == 12
    assert len(checked) == 3 and len(set(checked)) == 3


def _noted_before(records: list[Any]) -> list[list[int]]:
    """`noted.note`'s ranges as it made them before perf49 (a call a record)."""
    runs: list[list[int]] = []
    for p in sorted({p if isinstance(p, int) else p[0] for p in records}):
        if runs and runs[-1][1] == p - 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return runs


@pytest.mark.parametrize(
    "records",
    [
        [],
        [0],
        list(range(500)),
        [3, 1, 2, 0, 2],
        [*range(10), *range(12, 20), 40],
        [PositionPath((2, 0, 1)), PositionPath((2, 1, 0))],
        [0, 1, PositionPath((2, 0, 0)), 3],
        [PositionPath((5, 0)), 1, 2, 3],
        [0, 1, 2, PositionPath((7, 0))],
        [PositionPath((0, 0)), 0, PositionPath((1, 3))],
    ],
)
def test_a_note_keeps_its_ranges(records: list[Any]) -> None:
    # Sorted in C when every position is an int (a note a resume makes twice).
    extra: dict[str, Any] = {}
    note(extra, records, None, "batch")
    assert extra["finished"] == _noted_before(records)
    assert extra["operations"] == len(records)
