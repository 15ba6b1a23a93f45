"""The 40th new-user walk, on the command line, in process: `durable show`
of a run that waits says where, gc given a workflow no run has says so in
Python too, a renamed workflow's `--resume` names the old name's runs."""

from __future__ import annotations

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
def fetch(n: int) -> int:
    note("fetch")
    return n + 1


@durable.step
def review(n: int) -> int:
    note("review")
    durable.suspend("a person checks it")
    return n


@durable.workflow
def checked(n: int = 1) -> int:
    return review(fetch(n))


@durable.workflow
def asks(n: int = 1) -> str:
    return f"{fetch(n)} {durable.wait_for('ok')}"


@durable.workflow
def outer(n: int = 1) -> str:
    return asks(fetch(n))


@durable.step
def finish(n: int) -> int:
    note("finish")
    return n * 10


@durable.workflow
def gate(n: int = 1) -> int:
    x = fetch(n)
    if os.environ.get("HOLD"):
        durable.suspend("held")
    return finish(x)


@durable.workflow
def report(n: int = 1) -> int:
    x = fetch(n)
    durable.suspend("before the end")
    return x
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _rows(out: str) -> list[list[str]]:
    """The step table of `durable show`, each row split on runs of 2+ spaces."""
    table = out.split("\n\n", 1)[1].splitlines()
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in table[1:]]


def test_show_of_a_run_suspended_in_a_step_shows_where_it_waits(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the table of a run suspended inside its first step was empty,
    and a run waiting at a wait_for after a step showed that step alone:
    nothing said where the run waited."""
    assert main(["run", "flow.py:checked", "--run-id", "s1"]) == 3
    capsys.readouterr()
    assert main(["show", "s1"]) == 0
    out, err = capsys.readouterr()
    rows = _rows(out)
    assert [r[:4] for r in rows] == [
        ["0", "step", "fetch", "completed"],
        ["1", "-", "suspend()", "suspended"],
    ]
    assert rows[1][-1] == "waits: a person checks it"
    assert (
        "continue with: durable run flow.py:checked --run-id s1 --resume --var NAME=VALUE" in err
    )
    assert main(["run", "flow.py:asks", "--run-id", "w1"]) == 3
    capsys.readouterr()
    assert main(["show", "w1"]) == 0
    out, err = capsys.readouterr()
    assert [r[:4] for r in _rows(out)] == [
        ["0", "step", "fetch", "completed"],
        ["1", "input", "ok", "suspended"],
    ]
    assert _rows(out)[1][-1] == "waits for --input ok=VALUE"
    assert "--resume --input ok=VALUE" in err
    assert main(["show", "w1", "--json"]) == 0  # the document stays what was recorded
    assert '"steps": [\n    {\n      "position": 0,' in capsys.readouterr().out
    assert main(["run", "flow.py:outer", "--run-id", "o1"]) == 3  # waits in its child run
    capsys.readouterr()
    assert main(["show", "o1"]) == 0
    assert _rows(capsys.readouterr().out)[1] == [
        "1", "workflow", "flow.asks (run o1.1)", "suspended", "0", "-", "waits in its child run"
    ]  # fmt: skip
    assert (flow / "counts").read_text() == "fetch\nreview\nfetch\nfetch\nfetch\n"


def test_a_suspend_in_the_body_is_not_named_after_the_operation_the_plan_has_there(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suspend() in the body takes no position: the last attempt's plan
    has the operation after it there (`finish`), which never ran."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0  # its plan: fetch, finish
    assert main(["fork", "g1", "--at", "1", "--new-run-id", "g2"]) == 0  # the fork keeps it
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "flow.py:gate", "--run-id", "g2", "--resume"]) == 3
    capsys.readouterr()
    assert main(["show", "g2"]) == 0
    assert [r[:4] for r in _rows(capsys.readouterr().out)] == [
        ["0", "step", "fetch", "completed"], ["1", "-", "suspend()", "suspended"]
    ]  # fmt: skip
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_a_rerun_that_suspends_before_the_changed_step_says_where_it_waits(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "suspended at step 3 (position 2)", the first position with no
    record, behind the changed step's record the rerun had not reached yet."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    (flow / "flow.py").write_text(FLOW.replace("n * 10", "n * 100"))
    monkeypatch.setenv("HOLD", "1")
    capsys.readouterr()
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 3
    assert "run g1 suspended at step 2 (position 1): held\n" in capsys.readouterr().err
    monkeypatch.delenv("HOLD")
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 0
    assert capsys.readouterr().out == "200\n"
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\n"


def test_gc_in_python_of_a_workflow_with_no_runs_says_so_as_the_command_does(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: durable.gc(workflow="typo", ...) returned [] silently where
    `durable gc --workflow typo` exits 2 naming the workflows with runs."""
    assert main(["run", "flow.py:asks", "--run-id", "g1"]) == 3
    with pytest.raises(durable.RunNotFoundError, match=r"no runs of workflow 'asks' in .*store; "
                       r"did you mean flow\.asks\? workflows with runs: flow\.asks$") as e:  # fmt: skip
        durable.gc(workflow="asks", status="suspended")
    assert isinstance(e.value, LookupError)
    capsys.readouterr()
    assert main(["gc", "--workflow", "asks", "--status", "suspended"]) == 2
    assert capsys.readouterr().err == f"durable: {e.value}\n"
    assert main(["runs", "asks"]) == 2  # one check, one text, for every look at a workflow's runs
    assert capsys.readouterr().err == f"durable: {e.value}\n"
    assert durable.gc(workflow="flow.asks", status="completed") == []  # runs, none of that status
    assert [i.run_id for i in durable.gc(workflow="flow.asks", status="suspended")] == ["g1"]
    with pytest.raises(durable.RunNotFoundError, match="nosuch; there is no such folder"):
        durable.gc(flow / "nosuch", workflow="flow.asks", status="suspended")  # a typo in the store


def test_a_renamed_workflow_resumed_without_a_run_id_names_the_old_names_unfinished_runs(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run flow.py:summary --resume` (report renamed) said only
    "no unfinished run of flow.summary ... Pass --run-id"."""
    assert main(["run", "flow.py:report", "--run-id", "r1"]) == 3
    (flow / "flow.py").write_text(FLOW.replace("def report", "def summary"))
    capsys.readouterr()
    assert main(["run", "flow.py:summary", "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("durable: no unfinished run of flow.summary in ")
    assert (
        "lists them)\n  unfinished runs of other workflows of flow: r1 of flow.report (suspended); a renamed "
        "function is another workflow: to resume r1, run the function under its old name, "
        "flow.py:report (durable show r1 --workflow flow.report shows it)"
    ) in err
    assert (flow / "counts").read_text() == "fetch\n"  # nothing ran
