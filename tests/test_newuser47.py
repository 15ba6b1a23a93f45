"""The 47th new-user walk, on the command line: the command that restarts a
run is built in one place, so `durable show` (and `cancel`'s advice) and
`durable run` print the same line, and neither drops the recorded
arguments it cannot read; a run stopped by a suspend() of a workflow
without parameters continues with `--resume` alone, not with a `--var
NAME=VALUE` that no parameter takes."""

from __future__ import annotations

import importlib
import shlex
import sys
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

FLOW = """\
import os

import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def add(x: int) -> int:
    note("add")
    return x + 1


@durable.workflow
def gate() -> int:
    first = add(0)
    if not os.path.exists("approved"):
        durable.suspend("a person must approve first (touch approved)")
    return first + add(10)


@durable.workflow
def paired(pair: tuple = (1, 2), n: int = 3) -> int:
    add(n)
    durable.suspend("waiting for a reviewer")
    return n
"""
# A workflow whose parameter a test renames.
HELD = """

@durable.workflow
def held(NAME: int = 3) -> int:
    add(NAME)
    durable.suspend("waiting for a reviewer")
    return NAME
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW + HELD.replace("NAME", "n"))
    return tmp_path


def _line(err: str, head: str) -> str:
    (line,) = [x for x in err.splitlines() if head in x]
    return line.split(head, 1)[1]


def test_a_suspend_without_parameters_continues_with_resume_alone(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run flow.py:gate --run-id g1 --resume
    --var NAME=VALUE` (and `durable show` added "(to answer a wait_for:
    --input NAME=VALUE)" to a run stopped at a suspend()): gate takes no
    parameter, so the pasted line was refused whatever NAME was filled in;
    the Suspended of the Python call said `gate.resume('g2', NAME=VALUE,
    ...)`, a TypeError."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 3
    said = _line(capsys.readouterr().err, "continue with: ")
    assert said == "durable run flow.py:gate --run-id g1 --resume", said
    assert main(["show", "g1"]) == 0
    assert _line(capsys.readouterr().err, "continue with: ") == said
    (flow / "approved").touch()
    assert main(shlex.split(said)[1:]) == 0  # pasted as printed: it goes on
    assert capsys.readouterr().out.strip() == "12"
    assert (flow / "counts").read_text().split() == ["add", "add"]
    (flow / "approved").unlink()
    (flow / "flow47.py").write_text(FLOW)  # the Python API's words, for a notebook
    monkeypatch.syspath_prepend(str(flow))
    monkeypatch.delitem(sys.modules, "flow47", raising=False)
    with pytest.raises(durable.Suspended) as e:
        importlib.import_module("flow47").gate.with_options(run_id="g2")()
    message = str(e.value)
    assert "gate.resume('g2')" in message and "NAME=VALUE" not in message, message
    assert message.endswith("run flow47:gate --run-id g2 --resume"), message
    monkeypatch.delitem(sys.modules, "flow47")


def test_a_suspend_of_a_workflow_with_parameters_is_not_told_of_wait_for(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show` of a run stopped by suspend() ended its line
    with "(to answer a wait_for: --input NAME=VALUE)": it waits for no
    input. The parameters it may take stay to fill in."""
    assert main(["run", "flow.py:paired", "--run-id", "p1"]) == 3
    said = _line(capsys.readouterr().err, "continue with: ")
    assert said == "durable run flow.py:paired --run-id p1 --resume --var NAME=VALUE", said
    assert main(["show", "p1"]) == 0
    assert _line(capsys.readouterr().err, "continue with: ") == said


def test_show_and_run_print_one_restart_command(flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two functions built the restart line (`durable run`'s and `durable
    show`'s): read with --no-pickle, where the recorded tuple cannot be
    decoded, `show` printed a bare `--restart`, which starts the run with
    the defaults (n=3, not the recorded 7) without a word, while `durable
    run` gave `--var NAME=VALUE` to fill in."""
    assert main(["run", "flow.py:paired", "--run-id", "c1", "--var", "n=7"]) == 3
    assert main(["cancel", "c1"]) == 0
    capsys.readouterr()
    assert main(["show", "c1"]) == 0
    shown = _line(capsys.readouterr().err, "cancelled: it runs again only afresh, with: ")
    assert main(["run", "flow.py:paired", "--run-id", "c1"]) == 4
    ran = _line(capsys.readouterr().err, "restart it with: ")
    # No --var gives the tuple (newuser48): the call from Python, with both recorded values.
    assert shown == ran == ("from Python (pair: no --var gives it as recorded, --var takes JSON): from flow "
                            "import paired; paired.with_options(run_id='c1', restart=True)(pair=(1, 2), n=7)")  # fmt: skip
    assert main(["--no-pickle", "show", "c1"]) == 0
    unread = _line(capsys.readouterr().err, "cancelled: it runs again only afresh, with: ")
    assert unread == "durable run flow.py:paired --run-id c1 --restart --var NAME=VALUE", unread
    assert (flow / "counts").read_text().split() == ["add"]


def test_the_restart_line_gives_only_the_parameters_the_workflow_takes_now(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: after `held`'s parameter n was renamed to m, the refusal's
    `or start fresh: durable run flow.py:held --run-id r1 --restart --var
    n=7` was refused when pasted ("flow.held has no parameter n")."""
    assert main(["run", "flow.py:held", "--run-id", "r1", "--var", "n=7"]) == 3
    (flow / "flow.py").write_text(FLOW + HELD.replace("NAME", "m"))
    capsys.readouterr()
    assert main(["run", "flow.py:held", "--run-id", "r1"]) == 2  # refused: the code changed
    fresh = _line(capsys.readouterr().err, "or start fresh: ")
    assert fresh == "durable run flow.py:held --run-id r1 --restart", fresh
    assert main(shlex.split(fresh)[1:]) == 3  # pasted: it runs afresh, and suspends again
    assert (flow / "counts").read_text().split() == ["add", "add"]


def test_a_cancelled_run_whose_code_changed_is_told_to_restart_only(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the refusal of the changed code came first and advised
    `--resume --on-change rerun` and `--resume --rebase-checkpoint`, each
    then refused as cancelled (exit 4): a cancelled run runs only afresh."""
    assert main(["run", "flow.py:held", "--run-id", "r1", "--var", "n=7"]) == 3
    assert main(["cancel", "r1"]) == 0
    (flow / "flow.py").write_text(FLOW + HELD.replace("NAME", "n").replace("add(n)", "add(n + 1)"))
    capsys.readouterr()
    assert main(["run", "flow.py:held", "--run-id", "r1"]) == 4
    err = capsys.readouterr().err
    assert "--resume" not in err and "refused" not in err, err
    again = _line(err, "restart it with: ")
    assert again == "durable run flow.py:held --run-id r1 --restart --var n=7", again
    assert main(shlex.split(again)[1:]) == 3
    assert (flow / "counts").read_text().split() == ["add", "add"]


@pytest.mark.parametrize(("typed", "meant"), [("done", "completed"), ("suspnded", "suspended"), ("Failed", "failed")])
def test_a_status_guessed_or_mistyped_is_told_the_one_meant(
    typed: str, meant: str, flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable runs --status done` listed the eleven statuses and
    left the user to pick; `durable.gc(status=...)` the same."""
    assert main(["runs", "--status", typed]) == 2
    assert capsys.readouterr().err.rstrip().endswith(f"; did you mean {meant}?")
    with pytest.raises(durable.ConfigurationError, match=f"did you mean {meant}"):
        durable.gc(store=str(flow / "store"), status=typed)
