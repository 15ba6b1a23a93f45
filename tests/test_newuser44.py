"""The 44th new-user walk, on the command line: the commands printed when the
tool was started as `python -m durable`, cancelling a completed run, a run
whose script was renamed since."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from durable._cli.main import main
from durable._errortext import program
from tests.clikit import child_env
from tests.test_newuser41 import FLOW


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def test_cancel_of_a_completed_run_names_it_in_the_rm_it_advises(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `run 'g1' has completed; there is nothing to cancel (remove it
    with `durable rm` if it is no longer wanted)`: `durable rm` alone fails."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    capsys.readouterr()
    assert main(["cancel", "g1"]) == 2
    err = capsys.readouterr().err
    assert "(remove it with `durable rm g1` if it is no longer wanted)" in err, err
    assert main(["rm", "g1"]) == 0  # the line advised, pasted


def test_a_renamed_script_s_run_is_told_what_to_do(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `continue with: `durable run` of flow.py:gate, given by its
    path from here (no flow.py is in this folder), ...` after flow.py was
    renamed flow2.py: `durable run flow2.py:gate --run-id g1 --resume` is
    another workflow (flow2.gate), which has no run g1."""
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 3
    (flow / "flow.py").rename(flow / "flow2.py")
    capsys.readouterr()
    assert main(["show", "g1"]) == 0
    line = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert "flow.py, the script the run was started from, is not in this folder" in line, line
    assert "if it was renamed, rename it back to flow.py first (the workflow of a renamed script is " \
        "another one, without run g1)" in line, line
    monkeypatch.delenv("HOLD")
    assert main(["run", "flow2.py:gate", "--run-id", "g1", "--resume"]) == 2  # as renamed: refused
    err = capsys.readouterr().err
    assert "If flow.py was renamed flow2.py, its gate is another workflow: rename it back " \
        "to go on with this run." in err, err
    (flow / "flow2.py").rename(flow / "flow.py")
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume"]) == 0
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


@pytest.mark.slow
def test_python_m_durable_prints_commands_that_start_as_it_was_started(tmp_path: Path) -> None:
    """Before: started as `python -m durable` (no `durable` on PATH), `to do
    that: durable run flow.py:gate --run-id r1 --resume` failed pasted:
    `durable: command not found`."""
    (tmp_path / "flow.py").write_text(FLOW)
    env = child_env(tmp_path, STOP="ctrl-c")
    words = [sys.executable, "-m", "durable"]
    run = subprocess.run([*words, "run", "flow.py:gate", "--run-id", "r1"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 130, run.stderr
    said = run.stderr.rstrip().rpartition("continue with: ")[2]
    assert said == f"{shlex.join(words)} run flow.py:gate --run-id r1 --resume", run.stderr
    del env["STOP"]
    pasted = subprocess.run(said, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert pasted.returncode == 0, pasted.stderr
    assert (tmp_path / "counts").read_text() == "fetch\nfinish\nfinish\n"


def test_main_called_in_process_prints_durable(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`main()` called by a script (or pytest) was not started as `-m durable`."""
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "r1"]) == 130
    assert "continue with: durable run flow.py:gate --run-id r1 --resume" in capsys.readouterr().err


def test_a_store_given_as_a_home_path_is_not_said_to_be_missing(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `durable --store '~/runs' show nope` (quoted, as from a
    config file) read the store at $HOME/runs, yet said `there is no such
    folder (CWD/~/runs: a relative path is read from the working folder)`."""
    monkeypatch.setenv("HOME", str(flow / "home"))
    (flow / "home" / "runs").mkdir(parents=True)
    assert main(["--store", "~/runs", "run", "flow.py:gate", "--run-id", "g1"]) == 0
    capsys.readouterr()
    assert main(["--store", "~/runs", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no run 'nope'" in err and "no such folder" not in err, err
    assert main(["--store", "~/gone", "runs"]) == 2
    err = capsys.readouterr().err
    assert f"there is no such folder ({flow / 'home' / 'gone'}); check" in err, err


def test_help_s_examples_start_as_the_tool_was_started(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `python3 -m durable --help` listed `durable run flow.py:pipeline
    --var n=5` and the others: lines that fail pasted without `durable` on PATH."""
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-m", "durable", "--help"])
    monkeypatch.setattr(sys, "argv", ["/site/durable/__main__.py", "--help"])
    program.cache_clear()
    try:
        with pytest.raises(SystemExit):
            main(["--help"])
    finally:
        program.cache_clear()
    out = capsys.readouterr().out
    assert out.startswith("usage: python3 -m durable [-h]"), out
    assert "\n  python3 -m durable run flow.py:pipeline --var n=5       run pipeline(n=5)" in out, out
    assert "\n  python3 -m durable runs                                 list the runs" in out, out
    assert "`python3 -m durable COMMAND --help` describes a command" in out, out
    assert "\n  durable " not in out, out


def test_the_console_script_run_by_its_path_prints_that_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.venv/bin/durable ...` of a venv not activated printed `durable ...`,
    which is another program (or none) on PATH; the one on PATH prints `durable`."""
    script = tmp_path / "bin" / "durable"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, str(script), "runs"])
    monkeypatch.setattr(sys, "argv", [str(script), "runs"])
    said = []
    for path in (str(tmp_path), str(script.parent)):  # not on PATH, then on it
        monkeypatch.setenv("PATH", path)
        program.cache_clear()
        said.append(program())
    program.cache_clear()
    assert said == [str(script), "durable"]
