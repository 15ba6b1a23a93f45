"""`durable fork` killed (kill -9) once it copied records, before the new
run's manifest (written last, so that a half-made fork is no run): `durable
runs` lists no run of that id, `durable show` says there is none and that
no call replays what is left, yet the same fork made again was refused:
"run ... already exists; ... delete it first (durable rm ...)". hunt56's
campaign found it at 2 of its first 2 kills of a fork. The fork made again
now removes what the cut-short one left (under the new run's lease, as a
run started afresh there does) and completes; its resume runs only the
positions from `at` on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._manage.fork import fork_run
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a real process killed

KILLED_FORK = """
import os, signal, sys
from durable._manage import fork

def killed(*args, **kwargs):  # the manifest is the fork's last write: killed just before it
    os.kill(os.getpid(), signal.SIGKILL)

fork._write_fork_manifest = killed
from durable._cli import main
main(["--store", sys.argv[1], "fork", "r", "--at", "2", "--new-run-id", "f"])
"""


@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{i}\n")
    return i * 10


@durable.workflow(name="w")
def w() -> list[int]:
    return [work(i) for i in range(4)]


def test_a_fork_killed_before_its_manifest_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran, store = tmp_path / "ran", str(tmp_path / "store")
    monkeypatch.setenv("RAN", str(ran))
    assert w.with_options(store=store, run_id="r")() == [0, 10, 20, 30]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    killed = subprocess.run([sys.executable, "-c", KILLED_FORK, store], env=env, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    assert os.listdir(tmp_path / "store" / "w" / "f")  # what it left: records, no manifest
    opened = durable.open_store(store)
    assert [r.run_id for r in w.with_options(store=opened).runs()] == ["r"]
    assert fork_run(opened, "w", "r", 2, new_run_id="f") == "f"  # refused: "already exists"
    ran.write_text("")
    assert w.with_options(store=store, run_id="f")() == [0, 10, 20, 30]
    assert ran.read_text().split() == ["2", "3"]
