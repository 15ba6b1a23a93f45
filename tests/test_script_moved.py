"""A run killed with kill -9 in one folder resumes from a copy of the script
at another absolute path, started from another working directory with
another $HOME: neither the path nor the environment is part of a workflow's
identity, its run id or its fingerprint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, os, signal
import durable

COUNTS = os.environ["FP_COUNTS"]

def bump(name):
    with open(os.path.join(COUNTS, name), "a") as f:
        f.write("x")

@durable.step
def fetch(repo):
    bump("fetch")
    return [f"{repo}#{i}" for i in range(3)]

@durable.step(retries=1)
def summarise(commits):
    bump("summarise")
    return " / ".join(c.upper() for c in commits)

@durable.step
def publish(text):
    bump("publish")
    if os.path.exists(os.environ["FP_KILL"]):
        os.remove(os.environ["FP_KILL"])
        os.kill(os.getpid(), signal.SIGKILL)  # a real kill -9, mid-run
    return f"published: {text}"

@durable.workflow
def release(repo):
    return publish(summarise(fetch(repo)))

if __name__ == "__main__":
    run = release.run("org/repo")
    print(json.dumps({"value": run.value, "replayed": run.steps_replayed,
                      "resumed_from": run.resumed_from_step, "id": run.run_id,
                      "fp": release.fingerprint}))
"""


def start(script: Path, cwd: Path, home: Path, shared: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(REPO),
        "DURABLE_STORE": str(shared / "store"),
        "FP_COUNTS": str(shared / "counts"),
        "FP_KILL": str(shared / "kill"),
    }
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def counts(shared: Path) -> dict[str, int]:
    return {p.name: len(p.read_text()) for p in sorted((shared / "counts").iterdir())}


@pytest.mark.slow
def test_killed_run_resumes_from_a_moved_copy(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    dirs = {
        n: tmp_path / n
        for n in ("proj_a", "elsewhere/proj_b", "cwd_a", "cwd_b", "home_a", "home_b")
    }
    for d in [*dirs.values(), shared / "counts"]:
        d.mkdir(parents=True)
    first = dirs["proj_a"] / "release.py"
    first.write_text(SCRIPT)
    (shared / "kill").touch()

    killed = start(first, dirs["cwd_a"], dirs["home_a"], shared)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert counts(shared) == {"fetch": 1, "publish": 1, "summarise": 1}

    moved = dirs["elsewhere/proj_b"] / "release.py"
    moved.write_text(first.read_text())
    first.unlink()  # the original is gone: nothing can come from its path
    done = start(moved, dirs["cwd_b"], dirs["home_b"], shared)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["value"] == "published: ORG/REPO#0 / ORG/REPO#1 / ORG/REPO#2"
    assert out["replayed"] == 2 and out["resumed_from"] == 2
    assert counts(shared) == {"fetch": 1, "publish": 2, "summarise": 1}

    again = start(moved, dirs["cwd_a"], dirs["home_a"], shared)  # completed: nothing runs
    assert json.loads(again.stdout)["fp"] == out["fp"]
    assert counts(shared) == {"fetch": 1, "publish": 2, "summarise": 1}
