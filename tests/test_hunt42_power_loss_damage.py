"""Damage in the middle of a local run log, as a filesystem may leave it
after a power loss: an entry's header intact and its data zeroed, or a
whole entry zeroed, with intact entries after it. Under "batch" and "none"
such damage past what the run knew synced is what a power loss may do to
records the level allows it to take (no sync covered them, nor anything
written after them: one fdatasync covers the whole file): the log is read
up to it, as a torn tail is, and the run resumes from the records before
it, running again the steps from the damage on. Under "fsync", or in bytes
a sync covered, it is real damage: refused, nothing runs (docs/storage.md,
durability levels)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._storage.logentry import data_offset, locate
from tests import test_hunt40_killed_first as t
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _entry(log: Path, name: str) -> tuple[int, int]:
    """(where the entry of record `name` starts, where its data starts)."""
    spans: dict[str, int] = {}
    locate(log.read_bytes(), "r", spans)
    data = spans[name] >> 32
    return data - data_offset(name), data


def _zero(log: Path, start: int, end: int) -> None:
    with open(log, "r+b") as f:
        f.seek(start)
        f.write(bytes(end - start))


def _damage(tmp_path: Path, how: str) -> int:
    """Step 1's record zeroed as a power loss may leave it: its data only
    (the header intact), or the whole entry; step 2's stays intact after it.
    Where the damaged entry starts, which the messages name (a record's size
    depends on its format and the level: not a constant)."""
    log = tmp_path / "s" / "r" / "r" / "records.log"
    start, data = _entry(log, "steps/00000001")
    end, _ = _entry(log, "steps/00000002")
    _zero(log, data if how == "data" else start, end)
    return start


def _resume(tmp_path: Path, level: str) -> durable.Run[int]:
    store = durable.open_store(tmp_path / "s", durability=level)
    return t.flow.with_options(store=store).resume("r")


def killed_synced(tmp_path: Path, level: str, interval: str = "1e-9") -> Path:
    """A run under `level` syncing once an `interval` (the default: after
    every record, each sync marking what it covered), killed at the start of
    step 3: 0, 1 and 2 recorded and synced, none of it noted in the manifest.
    Its records.log (skipped where the folder has no extended attributes)."""
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
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), level, str(tmp_path / "synced")]
    assert subprocess.run(argv, env=env, cwd=ROOT).returncode == -signal.SIGKILL
    assert ran.read_text().split() == ["0", "1", "2", "3"]
    return tmp_path / "s" / "r" / "r" / "records.log"


@pytest.mark.parametrize(("level", "how"), [("batch", "data"), ("none", "entry")])
def test_power_loss_damage_past_the_synced_log_resumes_from_before_it(
    tmp_path: Path, level: str, how: str
) -> None:
    # Killed at the start of step 3: 0, 1 and 2 recorded, none synced (the
    # child syncs once an hour under "batch", never under "none").
    assert t._killed(tmp_path, kill_at=3, level=level) == [0, 1, 2, 3]
    at = _damage(tmp_path, how)
    before = len(t.ran)
    flow = t.flow.with_options(store=durable.open_store(tmp_path / "s", durability=level))
    with pytest.warns(UserWarning, match=rf"damaged past what was synced, from byte {at} "):
        # A reader (the listing `recover` starts from) reads up to it too, where
        # before the run was listed "corrupt" and `recover` passed it over.
        assert [r.status for r in flow.runs()] == ["interrupted"]
        assert [r.value for r in flow.recover()] == [100]
    # 0 replays; 1 (damaged) and 2 (after it) run again, then 3 and 4.
    assert t.ran[before:] == [1, 2, 3, 4]
    before = len(t.ran)  # the log is whole again: a call replays all of it
    assert _resume(tmp_path, level).value == 100 and t.ran[before:] == []


def test_damage_under_fsync_stays_an_error(tmp_path: Path) -> None:
    assert t._killed(tmp_path, kill_at=3, level="fsync") == [0, 1, 2, 3]
    at = _damage(tmp_path, "data")
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {at}\b"):
        _resume(tmp_path, "batch")  # the level it was written under counts
    assert t.ran[before:] == []


@pytest.mark.parametrize(("first", "then"), [("batch", "batch"), ("fsync", "none")])
def test_damage_in_bytes_a_sync_covered_stays_an_error(
    tmp_path: Path, first: str, then: str
) -> None:
    # The first attempt leaves 0, 1 and 2; the second runs 3 and is killed.
    # Under "batch" it synced them before it noted them; under "none" it
    # syncs nothing, but the first synced each under "fsync". A power loss
    # cannot damage them now.
    assert t._killed(tmp_path, kill_at=3, level=first) == [0, 1, 2, 3]
    assert t._killed(tmp_path, kill_at=4, level=then, how="resume") == [3, 4]
    at = _damage(tmp_path, "data")
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {at}\b"):
        _resume(tmp_path, "batch")
    assert t.ran[before:] == []
