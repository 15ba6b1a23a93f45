"""Damage at the END of a local run log, in bytes a sync covered (a run
under "batch" whose syncs marked them, `syncmark`): the last record zeroed,
or the file cut short inside it. hunt47 made the resume refuse it
(`logentry.short_of`), but the read that found it had cut those bytes off
the file first (as a torn tail), fsynced: a record a sync had made durable
was destroyed by a reader, and the refusal's byte pointed at nothing. The
reader no longer cuts below the mark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t
from tests.test_hunt42_power_loss_damage import _entry, _resume, _zero

pytestmark = pytest.mark.slow


def _killed_synced(tmp_path: Path) -> Path:
    """A run under "batch" syncing after every record, killed at the start
    of step 3: 0, 1 and 2 recorded and synced (marked), none of it noted."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("no extended attributes here: nothing is marked")
    log = tmp_path / "ran.log"
    log.write_text("")
    code = t._CHILD.replace("sync_interval=3600", "sync_interval=1e-9") + "t.flow.with_options(store=store).run()\n"
    env = dict(os.environ, PYTHONPATH=str(t.ROOT), HUNT40_LOG=str(log), HUNT40_KILL_AT="3")
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), "batch", str(tmp_path / "synced")]
    assert subprocess.run(argv, env=env, cwd=t.ROOT).returncode == -signal.SIGKILL
    assert log.read_text().split() == ["0", "1", "2", "3"]
    records = tmp_path / "s" / "r" / "r" / "records.log"
    assert max(int(x) for x in (tmp_path / "synced").read_text().split()) == records.stat().st_size
    return records


def test_damage_at_the_end_of_synced_bytes_is_refused(tmp_path: Path) -> None:
    records = _killed_synced(tmp_path)
    whole = records.read_bytes()
    size = len(whole)
    start, _ = _entry(records, "steps/00000002")
    _zero(records, start, size)  # step 2's entry zeroed, the log's last
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}"):
        _resume(tmp_path, "batch")
    assert t.ran[before:] == []
    assert records.read_bytes() == whole[:start] + bytes(size - start)  # was: cut to 284 bytes
    # Its length made to run past the file's end: torn, as a writer killed
    # mid-append leaves it, but in bytes a sync covered.
    records.write_bytes(whole[:-5])
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}"):
        _resume(tmp_path, "batch")
    assert t.ran[before:] == []
    assert records.read_bytes() == whole[:-5]  # was: cut to 284 bytes
