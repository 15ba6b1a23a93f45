"""A local run log under "fsync" zeroed from a synced record to its end, or
cut short there, after a `kill -9`: every record under "fsync" was synced
before its step returned, and a power loss leaves no such loss in synced
bytes, yet the log was read as ending there (a zero-filled or torn tail)
and the steps recorded in those bytes ran a second time. The syncs of a
run under "fsync" now mark how far they covered too (`syncmark`), at most
once a `sync_interval` (no system call more per record), and such a log
is refused as under "batch", where hunt47 found the same (the test below
runs both levels)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t
from tests.test_hunt42_power_loss_damage import _entry, _resume, _zero, killed_synced

pytestmark = pytest.mark.slow


def _killed(tmp_path: Path, interval: str) -> Path:
    return killed_synced(tmp_path, "fsync", interval)


@pytest.mark.parametrize("level", ["batch", "fsync"])
@pytest.mark.parametrize("how", ["zeroed", "cut"])
def test_a_synced_log_damaged_to_its_end_is_refused_not_replayed(
    tmp_path: Path, level: str, how: str
) -> None:
    log = killed_synced(tmp_path, level)  # a mark after every sync
    start, _ = _entry(log, "steps/00000001")
    if how == "zeroed":  # from step 1's entry to the end: a zero-filled tail
        _zero(log, start, log.stat().st_size)
    else:  # cut inside step 1's entry: a torn tail
        os.truncate(log, start + 20)
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}\b"):
        _resume(tmp_path, level)  # was: read up to step 1, then 1 and 2 ran again
    assert t.ran[before:] == []


def test_the_mark_lags_by_an_interval_at_most(tmp_path: Path) -> None:
    """An hour's interval: the first sync marks (step 0's record), the next
    ones do not; a tail cut after step 0 reads as the log's end, as before:
    the steps of the last interval run again (the cost of no system call
    more per record)."""
    log = _killed(tmp_path, "3600")
    start, _ = _entry(log, "steps/00000001")
    os.truncate(log, start + 20)
    before = len(t.ran)
    assert _resume(tmp_path, "fsync").value == 100
    assert t.ran[before:] == [1, 2, 3, 4]
    zeroed_first = tmp_path / "again"
    zeroed_first.mkdir()
    log = _killed(zeroed_first, "3600")
    start, _ = _entry(log, "steps/00000000")
    _zero(log, start, log.stat().st_size)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}\b"):
        _resume(zeroed_first, "fsync")
