"""A run whose holder was killed, then resumed with its code changed, is
refused before anything runs (the definition check): it stays what the
kill left, `interrupted`, and `durable show` said to continue it with
`--resume`, which is refused again while the code stays changed. `show`
and `runs` now say the resume was refused and give the refusal's ways out;
with the code put back, `--resume` resumes it (the killed step once more)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from durable._cli.main import main
from tests import clikit

FLOW = """
import os, signal, durable

def count(name):
    with open("count", "a") as f:
        f.write(name + "\\n")

@durable.step
def a():
    count("a")
    return 1

@durable.step
def b():
    count("b")
    if not os.path.exists("died"):
        open("died", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return 2

@durable.workflow
def wf() -> int:
    return a() + b()
"""

pytestmark = pytest.mark.slow


def _said(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """`durable ARGV` in this process (it loads no workflow): what it printed."""
    monkeypatch.setattr(sys, "argv", ["durable"])  # the commands it prints start `durable`
    assert main(list(argv)) == 0
    out = capsys.readouterr()
    return " ".join((out.out + out.err).split())


def test_a_resume_refused_at_the_start_of_a_killed_run_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "flow.py"
    flow.write_text(FLOW)
    env = clikit.child_env(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", env["DURABLE_STORE"])
    killed = clikit.durable(tmp_path, "run", "flow.py:wf", "--run-id", "r1", env=env)
    assert killed.returncode == -9, killed.stderr
    flow.write_text(FLOW.replace("return 1", "return 10"))
    refused = clikit.durable(tmp_path, "run", "flow.py:wf", "--run-id", "r1", "--resume", env=env)
    assert refused.returncode == 2, refused.stderr
    said = _said(monkeypatch, capsys, "show", "r1")
    assert "status interrupted (resume refused; see below) refused code changed since: definition" in said, said
    assert "continue with:" not in said, said
    assert "put the code back, then: durable run flow.py:wf --run-id r1 --resume" in said, said
    assert "--on-change rerun" in said and "--rebase-checkpoint" in said and "--restart" in said, said
    assert "interrupted (resume refused)" in _said(monkeypatch, capsys, "runs")
    flow.write_text(FLOW)  # put back: resumes, the killed step once more
    resumed = clikit.durable(tmp_path, "run", "flow.py:wf", "--run-id", "r1", "--resume", env=env)
    assert resumed.returncode == 0 and resumed.stdout.split()[-1] == "3", resumed.stdout + resumed.stderr
    assert (tmp_path / "count").read_text().split() == ["a", "b", "b"]
    assert "refused" not in _said(monkeypatch, capsys, "show", "r1")
