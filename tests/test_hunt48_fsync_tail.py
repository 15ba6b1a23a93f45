"""A local run log under "fsync" zeroed from a synced record to its end, or
cut short there, after a `kill -9`: every record under "fsync" was synced
before its step returned, and a power loss leaves no such loss in synced
bytes, yet the log was read as ending there (a zero-filled or torn tail)
and the steps recorded in those bytes ran a second time. The syncs of a
run under "fsync" now mark how far they covered too (`syncmark`), at most
once a `sync_interval` (no system call more per record), and such a log
is refused as under "batch" (test_hunt47_synced_tail)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t
from tests.conftest import ROOT
from tests.test_hunt42_power_loss_damage import _entry, _resume, _zero

pytestmark = pytest.mark.slow


def _killed(tmp_path: Path, interval: str) -> Path:
    """Killed at the start of step 3 under "fsync": 0, 1 and 2 recorded and
    synced, the attempt's start noting none of them (a fresh run)."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("no extended attributes here: nothing is marked")
    ran = tmp_path / "ran.log"
    ran.write_text("")
    code = t._CHILD.replace("sync_interval=3600", f"sync_interval={interval}")
    code += "t.flow.with_options(store=store).run()\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HUNT40_LOG=str(ran), HUNT40_KILL_AT="3")
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), "fsync", str(tmp_path / "synced")]
    assert subprocess.run(argv, env=env, cwd=ROOT).returncode == -signal.SIGKILL
    assert ran.read_text().split() == ["0", "1", "2", "3"]
    return tmp_path / "s" / "r" / "r" / "records.log"


@pytest.mark.parametrize("how", ["zeroed", "cut"])
def test_an_fsynced_log_damaged_to_its_end_is_refused_not_replayed(
    tmp_path: Path, how: str
) -> None:
    log = _killed(tmp_path, "1e-9")  # a mark after every sync
    start, _ = _entry(log, "steps/00000001")
    if how == "zeroed":  # from step 1's entry to the end: a zero-filled tail
        _zero(log, start, log.stat().st_size)
    else:  # cut inside step 1's entry: a torn tail
        os.truncate(log, start + 20)
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}\b"):
        _resume(tmp_path, "fsync")  # was: read up to step 1, then 1 and 2 ran again
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
