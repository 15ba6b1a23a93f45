"""The record path of perf47: the calls it no longer makes, and the checks
each one made, which stay where the call went.

A local store's `save_record` still checks the run's lease through
`Store.guard` (a fault test pauses there), `keep_plain` keeps an output of up to the blob threshold
inline without `keep_encoded`, and a run keeps the record it wrote through
`Recorded.keep` (`kept` and `__setitem__` in one call)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import durable
from durable._core.context import RunState
from durable._core.recorded import Recorded
from durable._storage.codec import pack_plain
from durable._storage.records import NO_EXTRA, NO_ITEMS, StepRecord, keep_plain


def test_a_lease_file_replaced_in_a_body_writes_no_record(tmp_path: Path) -> None:
    """The lease file replaced by another (a taker's) while a step's body
    runs, after the check made before the body: the check `save_record`
    makes before the write refuses the record."""
    root = tmp_path / "s"
    store = durable.open_store(root, durability="none")
    lease = root / "taken" / "r" / "lease"
    ran: list[int] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        if i == 1:  # another file at the lease's path now
            shutil.copyfile(lease, tmp_path / "copy")
            os.replace(tmp_path / "copy", lease)
        return i

    @durable.workflow(name="taken", run_id="r", store=store)
    def flow() -> list[int]:
        return [work(0), work(1), work(2)]

    with pytest.raises(durable.LeaseLostError) as info:
        flow()
    assert ran == [0, 1]
    assert info.value.position == 1
    assert store.record_names("taken", "r") == ["steps/00000000"]


@pytest.mark.parametrize(("extra", "blob"), [(0, False), (1, True)])
def test_an_output_over_the_blob_threshold_goes_to_a_blob(
    tmp_path: Path, extra: int, blob: bool
) -> None:
    """`keep_plain`: inline up to the store's blob threshold, a blob above it."""
    store = durable.open_store(tmp_path, blob_threshold=100)
    packed = pack_plain(b"x" * (98 + extra))  # a bin 8 header of 2 bytes: 100 bytes, or 101
    assert packed is not None and len(packed) == 100 + extra
    record = StepRecord.made(0, "s", "fp", "d", 0.0, [], [])
    keep_plain(store, ("w", "r"), record, packed)
    assert (record.blob is not None) is blob
    assert record.value == (None if blob else packed)


def test_a_record_written_is_kept_with_the_shared_empties(tmp_path: Path) -> None:
    """`Recorded.keep`: a record just written is held as a decoded one is,
    its empty attempts, artifacts and extra the shared empties, and bytes
    held undecoded at its position are forgotten."""
    records = Recorded()
    records.keep_sealed(0, b"stale")
    record = StepRecord.made(0, "s", "fp", "d", 0.0, [], [])
    records.keep(record)
    assert records.get(0) is record and list(records) == [0]  # the stale bytes are gone
    assert record.attempts is NO_ITEMS and record.artifacts is NO_ITEMS
    assert record.extra is NO_EXTRA
    assert RunState(run_id="r", workflow="w", store=durable.open_store(tmp_path)).records == {}
