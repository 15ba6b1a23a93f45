"""Records lost after an attempt that was killed (`kill -9`): that attempt
left no count of its own, so the resume after it had nothing to hold the
store to, and ran the lost finished steps again. Each attempt now starts
by noting the records it found (`finished.note`), and a rerun that discards
records lowers that note first (`finished.lower`): a killed rerun is not
taken for a loss."""

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
fail_at: list[int] = []


def _count(i: int) -> None:
    ran.append(i)
    log = os.environ.get("HUNT39_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{i}\n")
    if i == int(os.environ.get("HUNT39_KILL_AT", "-1")):
        os.kill(os.getpid(), signal.SIGKILL)
    if i in fail_at:
        raise RuntimeError("not yet")


@durable.step(name="part")
def part(i: int) -> int:
    _count(i)
    return i * 10


@durable.step(name="part")
def part_fixed(i: int) -> int:
    _count(i)
    return i * 100


@durable.workflow(name="w", run_id="r")
def flow() -> int:
    return sum(part(i) for i in range(5))


@durable.workflow(name="w", run_id="r", on_change="rerun")
def fixed() -> int:
    return sum(part_fixed(i) for i in range(5))


def executed() -> list[int]:
    """The parts executed in this process since the last look. Another test
    module counts through this, not by changing `ran` itself: a function
    that writes a global a step reads is part of the step's fingerprint,
    which would then differ in a child process that never imported it."""
    out = list(ran)
    ran.clear()
    return out


def _killed_resume(tmp_path: Path, which: str, kill_at: int) -> list[int]:
    """Resume run r in a child process, killed (SIGKILL) inside `kill_at`;
    the parts it executed."""
    log = tmp_path / "ran.log"
    log.write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT), HUNT39_LOG=str(log), HUNT39_KILL_AT=str(kill_at))
    code = (
        "import sys, durable\n"
        f"from tests.test_hunt39_killed_attempt import {which}\n"
        f"{which}.with_options(store=durable.open_store(sys.argv[1])).resume('r')\n"
    )
    child = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], env=env, cwd=ROOT)
    assert child.returncode == -signal.SIGKILL
    return [int(x) for x in log.read_text().split()]


def _failed_at_3(store: durable.Store) -> None:
    ran.clear()
    fail_at[:] = [3]
    with pytest.raises(RuntimeError):
        flow.with_options(store=store).run()  # parts 0, 1, 2 recorded
    fail_at.clear()


def test_a_record_lost_after_a_killed_attempt_is_refused(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    _failed_at_3(store)
    assert _killed_resume(tmp_path, "flow", kill_at=4) == [3, 4]  # 3 recorded, killed in 4
    store.drop_records("w", "r", ["steps/00000001"])  # lost since: 0, 2, 3 are left
    ran.clear()
    with pytest.raises(durable.CorruptRecordError, match="none at position 1"):
        flow.with_options(store=durable.open_store(tmp_path / "s")).resume("r")
    assert ran == []


def test_a_killed_rerun_that_discarded_records_resumes_without_a_refusal(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    _failed_at_3(store)
    # The fixed code discards 0, 1, 2 (another definition) and records 0, 1 anew.
    assert _killed_resume(tmp_path, "fixed", kill_at=2) == [0, 1, 2]
    ran.clear()
    run = fixed.with_options(store=durable.open_store(tmp_path / "s")).resume("r")
    assert run.value == 1000 and ran == [2, 3, 4]
