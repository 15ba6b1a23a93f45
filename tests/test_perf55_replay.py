"""perf55: a replayed call of a step the run found plain, whose canonical
bytes are its whole identity, is compared on its row before anything else
is made for it (`steps.replay_or_prepare`), and its row is decoded with
msgpack's defaults (`Recorded.row`). Whatever that row does not settle is
decided by the full path, as before: each case here is a later call of the
step (the first of a resume takes the full path and finds the step plain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.codec import pack, unpack
from durable._storage.records import seal_record
from durable.errors import CorruptRecordError, DefinitionChangedError, NondeterminismError

RAN: list[int] = []
SCALE = 3  # read by `scaled`: counted by its fingerprint


@durable.step(name="scaled")
def scaled(x: int) -> int:
    RAN.append(x)
    return SCALE * x


@durable.step(name="other")
def other(x: int) -> int:
    RAN.append(-x - 1)
    return x


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


def _flow(tmp_path: Path, **options: Any) -> Any:
    def body(shift: int = 0, swap: int = -1, done: int = 0) -> int:
        total = 0
        for i in range(6):
            # `other` at 0 first: found plain there, its call at `swap` takes the fast path too.
            total += other(i) if i in (0, swap) else scaled(i + (shift if i >= 4 else 0))
        if not done:
            durable.suspend("later")
        return total

    store = durable.open_store(tmp_path / "s", durability="batch")
    return durable.workflow(store=store, run_id="r", name="perf55", **options)(body)


def _recorded(tmp_path: Path, **options: Any) -> Any:
    flow = _flow(tmp_path, **options)
    with pytest.raises(durable.Suspended):
        flow()
    assert RAN == [-1, 1, 2, 3, 4, 5]
    RAN.clear()
    return flow


def test_every_call_replays_and_a_changed_argument_is_refused(tmp_path: Path) -> None:
    flow = _recorded(tmp_path)
    assert flow.resume("r", done=1).value == 3 * 15 and RAN == []
    flow = _recorded(tmp_path / "again")
    with pytest.raises(DefinitionChangedError, match="arguments changed") as e:
        flow.resume("r", shift=1)
    assert e.value.position == 4 and RAN == []


def test_a_changed_argument_runs_again_from_there_under_rerun(tmp_path: Path) -> None:
    flow = _recorded(tmp_path, on_change="rerun")
    assert flow.resume("r", shift=1, done=1).value == 3 * (15 + 2)
    assert RAN == [5, 6]  # positions 4 and 5, each once


def test_another_step_at_a_position_is_refused(tmp_path: Path) -> None:
    flow = _recorded(tmp_path)
    with pytest.raises(NondeterminismError, match="other"):
        flow.resume("r", swap=3)
    assert RAN == []


def test_a_changed_global_the_fingerprint_counts_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = _recorded(tmp_path)
    monkeypatch.setitem(globals(), "SCALE", 4)
    with pytest.raises(DefinitionChangedError, match="scaled"):
        flow.resume("r", done=1)
    assert RAN == []


def _rewrite(tmp_path: Path, at: int, change: Any) -> None:
    found: dict[Any, bytes] = {}
    store = durable.open_store(tmp_path / "s")
    named = store.load_sealed("perf55", "r", found)
    sealed = {**found, **{int(k.split("/")[1]): v for k, v in named.items() if k.startswith("steps/")}}
    store.replace_record("perf55", "r", f"steps/{at:08d}", change(sealed[at]))


def test_a_record_sealed_bad_but_logged_whole_is_refused(tmp_path: Path) -> None:
    flow = _recorded(tmp_path)

    def damaged(sealed: bytes) -> bytes:
        data = bytearray(sealed)
        data[-1] ^= 0x01  # its argument bytes, under a good log entry
        return bytes(data)

    _rewrite(tmp_path, 4, damaged)
    with pytest.raises(CorruptRecordError, match="checksum"):
        flow.resume("r", done=1)
    assert RAN == []


def test_a_row_msgpack_defaults_refuse_is_decided_by_the_full_path(tmp_path: Path) -> None:
    # An int key in its extra: the row's decode with msgpack's defaults refuses it,
    # the record's (`codec.unpack`) does not; replayed as the full path decides.
    flow = _recorded(tmp_path)

    def int_key(sealed: bytes) -> bytes:
        row = unpack(sealed[9:])
        row[14] = {7: "x"}
        return seal_record(pack(row), None)

    _rewrite(tmp_path, 4, int_key)
    assert flow.resume("r", done=1).value == 3 * 15 and RAN == []
