"""`durable fork` on a full disk (ENOSPC injected into a real child at the
system call, `strace --inject`, only for the fork's log): it said "then
call again to resume", but a fork keeps nothing of itself when it fails:
the advice is to run the fork again, and the same command then makes the
fork, whose resume runs only the steps after the fork's position."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

FLOW = """
import os, durable

@durable.step
def s(i: int) -> int:
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(name="w")
def w() -> int:
    return sum(s(i) for i in range(4))
"""
WRITES = "write,pwrite64,writev,pwritev,pwritev2"


def test_a_fork_on_a_full_disk_says_to_run_the_fork_again(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace injects the error: not installed")
    (tmp_path / "flow.py").write_text(FLOW)
    ran, store = tmp_path / "ran.log", tmp_path / "s"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}", RAN=str(ran))
    cli = [sys.executable, "-m", "durable", "--store", str(store)]

    def durable(*argv: str, fault: list[str] = []) -> subprocess.CompletedProcess[str]:  # noqa: B006
        return subprocess.run(
            [*fault, *cli, *argv], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )  # fmt: skip

    assert durable("run", "flow:w", "--run-id", "r").returncode == 0
    assert ran.read_text().split() == ["0", "1", "2", "3"]
    log = store / "w" / "f" / "records.log"
    full = [strace, "-f", "-qq", "-o", os.devnull, "-P", str(log), "-e", f"trace={WRITES}",
            f"--inject={WRITES}:error=ENOSPC:when=1"]  # fmt: skip
    fork = ("fork", "r", "--at", "2", "--new-run-id", "f")
    first = durable(*fork, fault=full)
    if "No space left on device" not in first.stderr:
        pytest.skip(f"strace cannot inject here: {first.stderr.strip()[:200]}")
    assert first.returncode != 0
    said = " ".join(first.stderr.split())
    assert "The disk is full: free some space, then run the fork again" in said, said
    assert "call again" not in said, said
    assert not (store / "w" / "f").exists()  # nothing of it kept: the same command makes it
    again = durable(*fork)
    assert again.returncode == 0, again.stderr
    resumed = durable("run", "flow:w", "--run-id", "f", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert ran.read_text().split() == ["0", "1", "2", "3", "2", "3"]  # only the positions after it
