"""The 48th new-user walk, on the command line: a run whose process died at
one step until `RunKilledError` was told to `--resume`, which is refused
again; a tuple parameter was told `--var pair=VALUE`, which no VALUE
fills; an ambiguous run id named no command; a second cancel read as a
first; a static method's workflow was missing from a script's targets."""

from __future__ import annotations

import importlib
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from durable._cli.main import main
from tests.conftest import ROOT

FLOW = """\
import os

import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def a() -> int:
    note("a")
    return 1


@durable.step
def b(x: int) -> int:
    note("b")
    if not os.path.exists("fixed"):
        os._exit(9)  # as the out-of-memory killer would
    return x + 1


@durable.workflow
def wf(pair: tuple = (1, 2)) -> int:
    return b(a())


@durable.workflow
def gate(pair: tuple = (1, 2)) -> int:
    a()
    if not os.path.exists("approved"):
        durable.suspend("a person must approve first")
    return pair[0]


class Jobs:
    @staticmethod
    @durable.workflow
    def nightly() -> int:
        return a()
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _lines(err: str, head: str) -> list[str]:
    return [x.split(head, 1)[1] for x in err.splitlines() if head in x]


@pytest.mark.slow
def test_a_run_killed_at_a_step_is_told_the_ways_out_not_resume(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: after `RunKilledError` `durable run` said "fix the cause,
    then: durable run flow.py:wf --run-id k1 --resume" and `durable show`
    "continue with: ... --resume": pasted, both refused again, running
    nothing. Now both print the error's ways out, each a line that works
    pasted: a larger DURABLE_MAX_RECOVERY_ATTEMPTS, the step changed, a
    restart (from Python here: no --var gives the tuple)."""
    env = {"PYTHONPATH": str(ROOT), "DURABLE_STORE": str(flow / "store"), "PATH": "/usr/bin:/bin"}
    start = [sys.executable, "-m", "durable", "run", "flow.py:wf", "--run-id", "k1"]
    died = subprocess.run(start, cwd=flow, env=env, capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "1")
    assert main(["run", "flow.py:wf", "--run-id", "k1", "--resume"]) == 1
    err = capsys.readouterr().err
    assert "--resume (after an edit" not in err and "fix the cause, then:" not in err, err
    assert "at step 2 (position 1, the step its process died in)" in err and "killed 1 time in a row" in err, err
    assert "its process died 1 time in a row at that step: a plain --resume is refused again" in err, err
    (more,) = _lines(err, "one more try (0: no limit): ")
    assert more == "DURABLE_MAX_RECOVERY_ATTEMPTS=2 durable run flow.py:wf --run-id k1 --resume", more
    (changed,) = _lines(err, "or change the step, then: ")
    assert changed == "durable run flow.py:wf --run-id k1 --resume --on-change rerun", changed
    (afresh,) = _lines(err, "or start afresh: ")
    assert afresh.endswith("from flow import wf; wf.with_options(run_id='k1', restart=True)(pair=(1, 2))"), afresh
    assert main(["show", "k1"]) == 0
    shown = capsys.readouterr().err
    assert "continue with:" not in shown and "  its process died" + err.split("  its process died")[1] in shown
    assert main(["run", "flow.py:wf", "--run-id", "k1", "--resume"]) == 1  # refused again, as said
    capsys.readouterr()
    with pytest.raises(SystemExit):  # the API's word: what does it, here the ways out too
        main(["resume", "k1"])
    assert "to do that: its process died 1 time in a row" in capsys.readouterr().err
    (flow / "fixed").touch()
    assignment, *words = shlex.split(more)
    monkeypatch.setenv(*assignment.split("="))
    assert main(words[1:]) == 0  # pasted as printed
    assert capsys.readouterr().out.strip() == "2"
    assert (flow / "counts").read_text().split() == ["a", "b", "b"]


def test_a_tuple_argument_is_restarted_from_python_not_with_var(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "restart it with: durable run flow.py:gate --run-id t1
    --restart --var pair=VALUE", though --var gives JSON and a tuple
    parameter refuses a list: no VALUE worked. Now the Python call that
    restarts it, which works pasted."""
    assert main(["run", "flow.py:gate", "--run-id", "t1"]) == 3
    assert main(["cancel", "t1"]) == 0
    assert main(["run", "flow.py:gate", "--run-id", "t1"]) == 4
    (said,) = _lines(capsys.readouterr().err, "restart it with: ")
    assert said == ("from Python (pair: no --var gives it as recorded, --var takes JSON): "
                    "from flow import gate; gate.with_options(run_id='t1', restart=True)(pair=(1, 2))"), said  # fmt: skip
    assert main(["show", "t1"]) == 0
    assert said in capsys.readouterr().err
    (flow / "approved").touch()
    monkeypatch.syspath_prepend(str(flow))
    monkeypatch.delitem(sys.modules, "flow", raising=False)
    space: dict[str, object] = {}
    exec(said.split("): ", 1)[1].replace("; ", "\nresult = ", 1), space)
    assert space["result"] == 1
    assert (flow / "counts").read_text().split() == ["a", "a"]
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "flow")


def test_a_run_id_of_several_workflows_prints_the_commands_that_name_one(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "run id 'same' exists in several workflows (flow.Jobs.nightly,
    flow.gate); name one with --workflow", and nothing to paste: which
    spelling, where in the line. Now the command typed again with each
    --workflow (of that run id alone for `rm a b`), which works pasted."""
    assert main(["run", "flow.py:gate", "--run-id", "same"]) == 3
    assert main(["run", "flow.py:Jobs.nightly", "--run-id", "same"]) == 0
    capsys.readouterr()
    assert main(["show", "same", "--json"]) == 2
    err = capsys.readouterr().err
    assert "exists in several workflows" in err, err
    lines = [x.strip() for x in err.splitlines()[1:]]
    assert lines == ["durable show same --json --workflow flow.Jobs.nightly",
                     "durable show same --json --workflow flow.gate"], lines  # fmt: skip
    assert main(shlex.split(lines[1])[1:]) == 0
    assert '"status": "suspended"' in capsys.readouterr().out
    assert main(["run", "flow.py:gate", "--run-id", "other"]) == 3
    capsys.readouterr()
    assert main(["rm", "other", "same"]) == 2
    err = capsys.readouterr().err
    assert "durable rm same --workflow flow.gate" in err and "rm other same" not in err, err
    assert (flow / "counts").read_text().split() == ["a", "a", "a"]


def test_a_second_cancel_says_the_run_was_already_cancelled(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a second `durable cancel c1` printed "run c1 of flow.gate
    cancelled" again, as if this one had done it."""
    assert main(["run", "flow.py:gate", "--run-id", "c1"]) == 3
    assert main(["cancel", "c1"]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "run c1 of flow.gate cancelled"
    assert main(["cancel", "c1"]) == 0
    again = capsys.readouterr().err.strip()
    assert again.startswith("run c1 of flow.gate was already cancelled (at 20"), again
    assert again.endswith("); nothing changed"), again
    assert (flow / "counts").read_text().split() == ["a"]


def test_a_static_method_workflow_is_among_a_scripts_targets(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run flow.py` listed "its workflows: gate, wf", not
    Jobs.nightly, which `durable run flow.py:Jobs.nightly` runs."""
    assert main(["run", "flow.py"]) == 2
    err = capsys.readouterr().err
    assert "its workflows: Jobs.nightly, gate, wf (give it as flow.py:Jobs.nightly)" in err, err
    assert main(["run", "flow.py:Jobs.nightly", "--run-id", "n1"]) == 0
    assert capsys.readouterr().out.strip() == "1"
    assert (flow / "counts").read_text().split() == ["a"]
