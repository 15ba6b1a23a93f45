"""An I/O error (EIO, as a network share may give) from the `flock` that
lets go a local run's lease once the run completed, injected into a real
child process at the system call (`strace --inject`): the call raised the
raw `OSError` from `fcntl.flock`, losing the value of a run whose every
record and manifest were written. The lock is dropped by the close of its
file that follows anyway: the call now returns the value. (hunt56's storage
campaign: 1 of its 14 EIOs injected into a `flock`.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, sys, durable

@durable.step
def s(i: int) -> int:
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(name="w", run_id="r")
def w() -> int:
    return s(1) + s(2)

print("value", w.with_options(store=sys.argv[1])())
"""


def test_an_io_error_letting_go_of_a_completed_runs_lease_keeps_its_value(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace injects the error: not installed")
    flow, ran, store = tmp_path / "flow.py", tmp_path / "ran.log", str(tmp_path / "s")
    flow.write_text(FLOW)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAN=str(ran))
    # The 6th flock: the lease's (1), each record's append locks and unlocks the log (2-5), the lease's unlock.
    fault = "--inject=flock:error=EIO:when=6"
    first = subprocess.run(
        [strace, "-f", "-qq", "-o", os.devnull, fault, sys.executable, str(flow), store],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if "strace" in first.stderr and not ran.exists():
        pytest.skip(f"strace cannot trace here: {first.stderr.strip()[:200]}")
    assert first.stdout.split() == ["value", "30"], first.stderr[-600:]
    again = subprocess.run([sys.executable, str(flow), store], env=env, capture_output=True, text=True)
    assert again.stdout.split() == ["value", "30"], again.stderr[-600:]
    assert ran.read_text().split() == ["1", "2"]  # replayed, nothing executed again
