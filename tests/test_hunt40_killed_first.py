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


def _power_loss(tmp_path: Path, run: str) -> None:
    """What a power loss leaves of the run's log: the bytes the last
    fdatasync covered."""
    synced = tmp_path / "synced"
    sizes = [int(x) for x in synced.read_text().split()] if synced.exists() else []
    os.truncate(tmp_path / "s" / run / run / "records.log", max(sizes, default=0))


@durable.step(name="part")
def part(i: int) -> int:
    _count(i)
    return i * 10


@durable.workflow(name="r", run_id="r")
def flow() -> int:
    return sum(part(i) for i in range(5))


fail_first: list[bool] = []


@durable.step(name="first")
def first() -> int:
    _count(100)
    if fail_first:
        fail_first.clear()
        raise ValueError("not yet")
    return 1


@durable.step(name="second")
def second() -> int:
    _count(200)
    return 2


@durable.step(name="second")
def second_fixed() -> int:
    _count(300)
    return 3


@durable.workflow(name="c", run_id="c")
def caught() -> int:
    try:
        done = first()
    except ValueError:
        done = 0
    return done + second()


@durable.workflow(name="c", run_id="c", on_change="rerun")
def caught_fixed() -> int:
    try:
        done = first()
    except ValueError:
        done = 0
    return done + second_fixed()


def _killed(
    tmp_path: Path,
    kill_at: int,
    *,
    level: str = "fsync",
    power_loss: bool = False,
    how: str = "run",
    which: str = "flow",
) -> list[int]:
    """Run (or resume) the workflow `which` under durability `level` in a
    child process killed (SIGKILL) where `_count(kill_at)` is (not killed:
    -1), then a power loss if asked; what it counted."""
    log = tmp_path / "ran.log"
    log.write_text("")
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        HUNT40_LOG=str(log),
        HUNT40_KILL_AT=str(kill_at),
    )
    run = "c" if which.startswith("caught") else "r"
    code = _CHILD + f"t.{which}.with_options(store=store).{how}({'' if how == 'run' else repr(run)})\n"
    argv = [sys.executable, "-c", code, str(tmp_path / "s"), level, str(tmp_path / "synced")]
    child = subprocess.run(argv, env=env, cwd=ROOT)
    assert child.returncode == (-signal.SIGKILL if kill_at >= 0 else 0)
    if power_loss:
        _power_loss(tmp_path, run)
    return [int(x) for x in log.read_text().split()]


def test_a_record_lost_after_a_killed_first_attempt_is_refused(tmp_path: Path) -> None:
    assert _killed(tmp_path, kill_at=3) == [0, 1, 2, 3]  # 0, 1, 2 recorded
    store = durable.open_store(tmp_path / "s")
    store.drop_records("r", "r", ["steps/00000001"])  # lost since: 0 and 2 are left
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
    store = durable.open_store(tmp_path / "s", durability="batch")
    assert flow.with_options(store=store).resume("r").value == 100 and ran == [3, 4]


@pytest.mark.slow
def test_a_power_loss_after_a_rerun_noted_a_record_of_its_own_loses_no_run(tmp_path: Path) -> None:
    """The rerun's note of the records it keeps (`finished.lower`) counted
    one it had just written (`first`, which failed before), not yet synced."""
    store = durable.open_store(tmp_path / "s", durability="batch", sync_interval=3600)
    fail_first[:] = [True]
    ran.clear()
    assert caught.with_options(store=store)() == 2 and ran == [100, 200]
    # The fixed `second` discards its record (after `first` recorded its
    # own), and dies with the machine.
    kill = dict(level="batch", power_loss=True, how="resume", which="caught_fixed")
    assert _killed(tmp_path, kill_at=300, **kill) == [100, 300]  # type: ignore[arg-type]
    # Resumed as the killed attempt ran, in a process of its own: in this one
    # the test set `fail_first`, which `first` reads (it counts by contents here).
    assert _killed(tmp_path, kill_at=-1, how="resume", which="caught_fixed") == [300]
