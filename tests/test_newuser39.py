"""The 39th new-user walk, on the command line, in process: the commands a
refusal advises work when pasted as printed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """\
import os

import durable


@durable.step
def double(n: int) -> int:
    with open("counts", "a") as f:
        f.write("double\\n")
    return 2 * n


@durable.step
def other(n: int) -> int:
    return -n


@durable.workflow
def waits(n: int = 1) -> str:
    x = double(n) if not os.environ.get("FLIP") else other(n)
    return f"{x} {durable.wait_for('ok')}"
"""
STORE = "my store"  # a space: the advice must quote it


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLIP", raising=False)
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _advice(err: str, after: str) -> list[str]:
    """The command printed after `after`, as the shell would split it."""
    line = next(x for x in err.splitlines() if after in x)
    return shlex.split(line.split(after, 1)[1])


def _run(*args: str) -> int:
    return main(["--store", STORE, "run", "flow.py:waits", *args])


def test_the_restart_a_refusal_of_changed_code_advises_is_a_whole_command(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "or start fresh with --restart": a flag, the command around it
    (store, target, run id, the run's arguments, the input given) left to
    rebuild; rebuilt from the lines above it, it dropped n=5 (a restart
    takes only the --vars given) and ran with the default n=1."""
    assert _run("--run-id", "r1", "--var", "n=5") == 3
    (flow / "flow.py").write_text(FLOW.replace("2 * n", "3 * n"))
    capsys.readouterr()
    assert _run("--run-id", "r1", "--resume", "--input", "ok=yes it is") == 2
    restart = _advice(capsys.readouterr().err, "or start fresh: ")
    assert restart == [
        "durable", "--store", STORE, "run", "flow.py:waits", "--run-id", "r1", "--restart",
        "--var", "n=5", "--input", "ok=yes it is",
    ]  # fmt: skip
    assert main(restart[1:]) == 0
    assert json.loads(capsys.readouterr().out) == "15 yes it is"
    assert (flow / "counts").read_text() == "double\ndouble\n"


def test_the_restart_a_refusal_of_other_arguments_advises_is_a_whole_command(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("--run-id", "r2", "--var", "n=5") == 3
    assert _run("--run-id", "r2", "--resume", "--input", "ok=yes") == 0
    capsys.readouterr()
    assert _run("--run-id", "r2", "--var", "n=7") == 2
    restart = _advice(capsys.readouterr().err, "or start fresh with these arguments: ")
    assert restart[1:] == ["--store", STORE, "run", "flow.py:waits", "--run-id", "r2", "--restart",
                           "--var", "n=7"]  # fmt: skip
    assert main(restart[1:]) == 3  # a fresh run: it waits for its answer again
    assert (flow / "counts").read_text() == "double\ndouble\n"


def test_the_restart_a_refusal_of_another_step_advises_is_a_whole_command(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "... or start fresh with --restart." ended the
    NondeterminismError of `durable run`, a flag only."""
    assert _run("--run-id", "r3", "--var", "n=4") == 3
    monkeypatch.setenv("FLIP", "1")
    capsys.readouterr()
    assert _run("--run-id", "r3", "--resume", "--input", "ok=fine") == 2
    restart = _advice(capsys.readouterr().err, "start fresh: ")
    assert restart[1:] == ["--store", STORE, "run", "flow.py:waits", "--run-id", "r3", "--restart",
                           "--var", "n=4", "--input", "ok=fine"]  # fmt: skip
    assert main(restart[1:]) == 0
    assert json.loads(capsys.readouterr().out) == "-4 fine"
    assert (flow / "counts").read_text() == "double\n"


RENAMED = """\
import durable


@durable.step
def fetch(n: int) -> int:
    with open("counts", "a") as f:
        f.write("fetch\\n")
    return n + 1


@durable.workflow
def report(n: int = 1) -> int:
    return fetch(n) * 2
"""


def test_a_renamed_workflow_is_a_new_run_and_says_so(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A function renamed (report -> summary), its run id reused: never the
    old workflow's records under the new name. A resume is refused naming
    the old workflow; a run is a new run. Before, that new run said nothing
    of the run of the same id it did not resume."""
    (flow / "flow.py").write_text(RENAMED)
    assert _run_target("report", "--run-id", "r1", "--var", "n=2") == 0
    (flow / "flow.py").write_text(RENAMED.replace("def report", "def summary"))
    capsys.readouterr()
    assert _run_target("summary", "--run-id", "r1", "--resume") == 2
    err = capsys.readouterr().err
    assert "no run 'r1' of workflow 'flow.summary'" in err and "'flow.report'" in err
    assert (flow / "counts").read_text() == "fetch\n"  # nothing ran
    assert _run_target("summary", "--run-id", "r1", "--var", "n=2") == 0
    err = capsys.readouterr().err
    assert (
        "  a new run: run r1 of flow.report is another workflow's (a renamed function is another "
        "workflow; durable --store 'my store' show r1 --workflow flow.report shows it)"
    ) in err
    assert (flow / "counts").read_text() == "fetch\nfetch\n"
    assert main(["--store", STORE, "show", "r1", "--workflow", "flow.report"]) == 0
    (flow / "other.py").write_text(RENAMED)  # another script's run of that id is its own
    capsys.readouterr()
    assert main(["--store", STORE, "run", "other.py:report", "--run-id", "r1"]) == 0
    assert "a new run" not in capsys.readouterr().err


def _run_target(name: str, *args: str) -> int:
    return main(["--store", STORE, "run", f"flow.py:{name}", *args])


def test_show_of_a_run_waiting_for_an_input_continues_with_that_input(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show` of a run waiting at `wait_for('ok')` said
    "continue with: ... --resume --var NAME=VALUE (to answer a wait_for:
    --input NAME=VALUE)", though its status line named the input."""
    assert _run("--run-id", "w1", "--var", "n=2") == 3
    capsys.readouterr()
    assert main(["--store", STORE, "show", "w1"]) == 0
    err = capsys.readouterr().err
    assert (
        "  continue with: durable --store 'my store' run flow.py:waits --run-id w1 --resume "
        "--input ok=VALUE\n"
    ) in err


def test_gc_takes_the_workflow_as_gc_does_in_python(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable gc --workflow W` was "unrecognized arguments" although
    `durable.gc(workflow=W)` narrows to one workflow; a name that matches
    nothing exits 2, as for `durable runs W`."""
    (flow / "other.py").write_text(RENAMED)
    assert _run("--run-id", "g1", "--var", "n=1") == 3
    assert main(["--store", STORE, "run", "other.py:report", "--run-id", "g2"]) == 0
    capsys.readouterr()
    gc = ["--store", STORE, "gc", "--status", "suspended", "--status", "completed"]
    assert main([*gc, "--workflow", "report"]) == 2
    assert "did you mean other.report?" in capsys.readouterr().err
    assert main([*gc, "--workflow", "other.report"]) == 0
    assert "removed 1 run" in capsys.readouterr().err
    assert main(["--store", STORE, "show", "g1"]) == 0  # the other workflow's run stays


def test_a_restart_of_a_run_says_which_recorded_arguments_it_drops(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run ... --run-id r --resume --restart --input ok=x` of
    a run started with `--var n=5` ran afresh with the default n=1, silently
    (a restart takes only the --vars given)."""
    assert _run("--run-id", "d1", "--var", "n=5") == 3
    capsys.readouterr()
    assert _run("--run-id", "d1", "--resume", "--restart") == 3
    err = capsys.readouterr().err
    assert (
        "  --restart starts run d1 afresh with the --var given and the defaults, not its "
        "recorded n=5; to keep them: durable --store 'my store' run flow.py:waits --run-id d1 "
        "--restart --var n=5\n"
    ) in err
    assert _run("--run-id", "d1", "--restart", "--var", "n=5") == 3
    assert "afresh with the --var given" not in capsys.readouterr().err  # nothing dropped
