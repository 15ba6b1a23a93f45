"""Records lost after a run's first attempt was killed (`kill -9`) before it
noted anything: the resume found no note to hold the store to, and ran the
lost finished steps again. Each record now carries how many of its
attempt's records were written before it (`_storage.noted.carry`), so a
resume after a killed attempt knows at least how many it made.

And kill -9 plus a power loss under durability "batch": the resume that
noted the records the killed attempt left had not made them durable, so a
power loss right after took records its note promised, and the next resume
refused the run. A run now syncs the log it finds before it notes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

ran: list[int] = []


def _count(i: int) -> None:
    ran.append(i)
    log = os.environ.get("HUNT40_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{i}\n")
    if i == int(os.environ.get("HUNT40_KILL_AT", "-1")):
        os.kill(os.getpid(), signal.SIGKILL)


# The child counts each fdatasync (manifests are written with os.fsync: each
# is one of the run log's) by the size it covered.
_CHILD = """\
import os, sys, durable
from tests import test_hunt40_killed_first as t
real = os.fdatasync
def counting(fd):
    real(fd)
    with open(sys.argv[3], "a") as f:
        f.write(f"{os.fstat(fd).st_size}\\n")
os.fdatasync = counting
store = durable.open_store(sys.argv[1], durability=sys.argv[2], sync_interval=3600)
"""


def _power_loss(tmp_path: Path) -> None:
    """What a power loss leaves of the run's log: the bytes the last
    fdatasync covered."""
    synced = tmp_path / "synced"
    sizes = [int(x) for x in synced.read_text().split()] if synced.exists() else []
    os.truncate(tmp_path / "s" / "w" / "r" / "records.log", max(sizes, default=0))


@durable.step(name="part")
def part(i: int) -> int:
    _count(i)
    return i * 10


@durable.workflow(name="w", run_id="r")
def flow() -> int:
    return sum(part(i) for i in range(5))


def _killed(
    tmp_path: Path,
    kill_at: int,
    *,
    level: str = "fsync",
    power_loss: bool = False,
    how: str = "run",
) -> list[int]:
    """Run (or resume) r under durability `level` in a child process killed
    (SIGKILL) inside part `kill_at`, then a power loss if asked; the parts
    it executed."""
    log = tmp_path / "ran.log"
    log.write_text("")
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        HUNT40_LOG=str(log),
        HUNT40_KILL_AT=str(kill_at),
    )
    code = _CHILD + f"t.flow.with_options(store=store).{how}({'' if how == 'run' else repr('r')})\n"
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), level, str(tmp_path / "synced")]
    child = subprocess.run(argv, env=env, cwd=ROOT)
    assert child.returncode == -signal.SIGKILL
    if power_loss:
        _power_loss(tmp_path)
    return [int(x) for x in log.read_text().split()]


def test_a_record_lost_after_a_killed_first_attempt_is_refused(tmp_path: Path) -> None:
    assert _killed(tmp_path, kill_at=3) == [0, 1, 2, 3]  # 0, 1, 2 recorded
    store = durable.open_store(tmp_path / "s")
    store.drop_records("w", "r", ["steps/00000001"])  # lost since: 0 and 2 are left
    ran.clear()
    with pytest.raises(durable.CorruptRecordError, match=r"made at least 3 .* only 2"):
        flow.with_options(store=durable.open_store(tmp_path / "s")).resume("r")
    assert ran == []
    # As the refusal advises: a copy of the run, from a position before the loss.
    assert flow.with_options(store=store).fork("r", at=1, new_run_id="f").value == 100
    assert ran == [1, 2, 3, 4]


@pytest.mark.slow
def test_a_power_loss_after_a_killed_batch_attempt_was_noted_loses_no_run(tmp_path: Path) -> None:
    assert _killed(tmp_path, kill_at=3, level="batch") == [0, 1, 2, 3]  # none synced
    # The resume notes the three records it finds, runs 3 and dies with the
    # machine: the power loss keeps what was synced.
    assert _killed(tmp_path, kill_at=3, level="batch", power_loss=True, how="resume") == [3]
    ran.clear()
    run = flow.with_options(store=durable.open_store(tmp_path / "s", durability="batch")).resume(
        "r"
    )
    assert run.value == 100 and ran == [3, 4]
