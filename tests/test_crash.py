"""A real kill -9 mid-run: the re-run executes each step exactly once in total."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

import durable
from tests import forkcli

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

SCRIPT = """
import asyncio, os, sys
import durable

LOG = sys.argv[1]
MODE = sys.argv[2]

def note(i):
    if i == 5 and os.environ.get("HOLD_AT_5"):
        # Step 4's record is written; the parent kills us before step 5 works.
        print("IN5", flush=True)
        sys.stdin.readline()
    with open(LOG, "a") as f:
        f.write(f"{i}\\n")

@durable.step
def work(i: int) -> dict:
    note(i)
    return {"i": i, "sq": i * i}

@durable.step
async def awork(i: int) -> dict:
    note(i)
    return {"i": i, "sq": i * i}

@durable.workflow(run_id="crash")
def ten() -> list:
    return [work(i) for i in range(1, 11)]

@durable.workflow(run_id="crash")
async def aten() -> list:
    return [await awork(i) for i in range(1, 11)]

if MODE == "sync":
    run = ten.run()
else:
    run = asyncio.run(aten.run())
print("VALUE", run.value, run.resumed_from_step, run.steps_replayed, run.steps_executed, flush=True)
"""


def run_child(
    script: Path, log: Path, mode: str, env: dict[str, str], hold: bool
) -> subprocess.Popen[str] | forkcli.Forked:
    """`python flow.py LOG MODE`, forked from an interpreter that imported
    durable once (`forkcli`)."""
    child_env = dict(env, HOLD_AT_5="1") if hold else env
    return forkcli.popen([str(script), str(log), mode], script.parent, child_env, stdin_pipe=True)


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["fsync", "batch", "none"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kill_9_after_step_4_then_resume(
    tmp_path: Path, child_env: dict[str, str], mode: str, durability: str
) -> None:
    # A process crash loses nothing at any level (fsync only guards power loss).
    child_env = dict(child_env, DURABLE_DURABILITY=durability)
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    log = tmp_path / "log"
    child = run_child(script, log, mode, child_env, hold=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "IN5"
    wf = "flow.ten" if mode == "sync" else "flow.aten"
    recorded = durable.open_store(tmp_path / "store").load_records(wf, "crash")
    assert sorted(recorded) == [f"steps/{i:08d}" for i in range(4)]
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    resumed = run_child(script, log, mode, child_env, hold=False)
    out, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, out
    executed = [int(x) for x in log.read_text().split()]
    assert sorted(executed) == list(range(1, 11))  # each step body exactly once in total
    expected = [{"i": i, "sq": i * i} for i in range(1, 11)]
    assert out.strip() == f"VALUE {expected} 4 4 6"
    # An uninterrupted run in a fresh store gives the same value.
    fresh = dict(child_env, DURABLE_STORE=str(tmp_path / "fresh"))
    clean = run_child(script, tmp_path / "log2", mode, fresh, hold=False)
    clean_out, _ = clean.communicate(timeout=120)
    assert clean_out.strip() == f"VALUE {expected} None 0 10"
