"""A local run's holder killed (`kill -9`) just after it forked a process (a
pool's worker, here a step's own `os.fork()`), before that child closed its
copy of the lease file (`_storage.inherited`, an at-fork handler that runs
once the child is scheduled): the lock, shared by the two, outlived the
holder for those milliseconds, and a resume right then raised
`RunLockedError` naming the dead holder
(`tests/faults/test_campaign.py::test_kill_9_over_item_retries[processes-False]`,
once in five suite runs under `-n 2`). The child here is slow to close it
(an at-fork handler of its own, registered first, takes 0.5 s)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, signal, time

# Before durable's handler, which closes the lease's copy: a child scheduled late.
os.register_at_fork(after_in_child=lambda: os.environ.get("SLOW") and time.sleep(0.5))

import durable

def ran(what):
    with open(os.environ["RAN"], "a") as f:
        f.write(what + "\\n")

@durable.step
def first() -> int:
    ran("first")
    return 1

@durable.step
def forks() -> int:
    ran("forks")
    if os.environ.get("SLOW"):
        if os.fork() == 0:
            os._exit(0)
        os.kill(os.getpid(), signal.SIGKILL)  # the holder dies as its child starts
    return 2

@durable.workflow(name="forking", run_id="f")
def forking() -> int:
    return first() + forks()
"""


def test_a_resume_right_after_the_holder_died_forking_takes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "forked57.py").write_text(FLOW)
    monkeypatch.setenv("RAN", str(tmp_path / "ran"))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import forked57  # type: ignore[import-not-found]

    try:
        env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", SLOW="1")
        holder = subprocess.run([sys.executable, "-c", "import forked57; forked57.forking()"], env=env)
        assert holder.returncode == -signal.SIGKILL
        assert forked57.forking() == 3  # its forked child still has the lock for 0.5 s
    finally:
        sys.modules.pop("forked57", None)
    assert (tmp_path / "ran").read_text().split() == ["first", "forks", "forks"]
