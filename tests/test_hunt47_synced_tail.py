"""Damage reaching the end of a local run log from inside the bytes a sync
under "batch" covered (`syncmark`): the log zeroed from a synced record to
its end, or cut short below the mark. A power loss leaves neither in bytes
an fdatasync covered, yet both were read as the log's end (a zero-filled
tail, a torn one) before the mark was asked, and the steps recorded there,
durable since, ran a second time. Refused now, as damage in the middle of
the synced bytes is (test_review44_batch_synced)."""

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


def _killed_synced(tmp_path: Path) -> Path:
    """Killed at the start of step 3 under "batch", a sync after every record:
    0, 1 and 2 recorded and synced (marked), none of it noted in the manifest."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("no extended attributes here: nothing is marked")
    ran = tmp_path / "ran.log"
    ran.write_text("")
    code = t._CHILD.replace("sync_interval=3600", "sync_interval=1e-9") + "t.flow.with_options(store=store).run()\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HUNT40_LOG=str(ran), HUNT40_KILL_AT="3")
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), "batch", str(tmp_path / "synced")]
    assert subprocess.run(argv, env=env, cwd=ROOT).returncode == -signal.SIGKILL
    assert ran.read_text().split() == ["0", "1", "2", "3"]
    return tmp_path / "s" / "r" / "r" / "records.log"


@pytest.mark.parametrize("how", ["zeroed", "cut"])
def test_a_synced_log_damaged_to_its_end_is_refused_not_replayed(tmp_path: Path, how: str) -> None:
    log = _killed_synced(tmp_path)
    start, _ = _entry(log, "steps/00000001")
    if how == "zeroed":  # from step 1's entry to the end: a zero-filled tail
        _zero(log, start, log.stat().st_size)
    else:  # cut inside step 1's entry: a torn tail
        os.truncate(log, start + 20)
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}\b"):
        _resume(tmp_path, "batch")  # was: read up to step 1, then 1 and 2 ran again
    assert t.ran[before:] == []
