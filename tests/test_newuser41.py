"""The 41st new-user walk, on the command line: `durable show` of a run
whose rerun stopped before its changed step, of a run stopped in a step
(Ctrl-C, kill -9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from durable._manage.history import history

FLOW = """\
import os
import signal

import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def fetch(n: int) -> int:
    note("fetch")
    if os.environ.get("STOP") == "graceful":
        durable.request_stop()  # as SIGINT to `durable run`: fetch ends and is recorded
    return n + 1


@durable.step
def finish(n: int) -> int:
    note("finish")
    if os.environ.get("STOP") == "ctrl-c":
        raise KeyboardInterrupt
    if os.environ.get("STOP") == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    return n * 10


@durable.workflow
def gate(n: int = 1) -> int:
    x = fetch(n)
    if os.environ.get("HOLD"):
        durable.suspend("held")
    if os.environ.get("FAIL"):
        raise RuntimeError("the body broke")
    return finish(x)
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _show(capsys: pytest.CaptureFixture[str], run_id: str) -> tuple[list[str], list[list[str]]]:
    """`durable show`'s head lines and its step table, each row split on runs of 2+ spaces."""
    capsys.readouterr()
    assert main(["show", run_id]) == 0
    head, table = capsys.readouterr().out.split("\n\n", 1)
    rows = [[c.strip() for c in line.split("  ") if c.strip()] for line in table.splitlines()[1:]]
    return head.splitlines(), rows


def test_show_after_a_rerun_stopped_before_the_changed_step_does_not_list_its_old_record(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `finish` edited, the rerun suspended before reaching it, and
    show listed finish's old record as `completed` with its old output (20,
    which the code now would never give) and the suspend() after it, at
    position 2, where the run does not wait."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    (flow / "flow.py").write_text(FLOW.replace("n * 10", "n * 100"))
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 3
    head, rows = _show(capsys, "g1")
    assert head[-1] == "steps     1 finished of 2, next position 1"
    assert [r[:4] for r in rows] == [
        ["0", "step", "fetch", "completed"],
        ["1", "-", "suspend()", "suspended"],
        ["1", "step", "finish", "changed"],
    ]
    assert rows[2][-1] == "code changed since it ran (was: 20)"
    assert main(["show", "g1", "--json"]) == 0
    doc = capsys.readouterr().out
    assert '"completedSteps": 1,\n  "currentStep": 1,' in doc
    assert '"name": "finish",\n      "status": "changed",' in doc
    steps = history(durable.open_store(flow / "store"), "flow.gate", "g1")  # as Workflow.history()
    assert [(s.name, s.status, s.value) for s in steps[1:]] == [("fetch", "completed", 2), ("finish", "changed", 20)]
    monkeypatch.delenv("HOLD")
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 0
    _, rows = _show(capsys, "g1")
    assert [r[:4] for r in rows] == [["0", "step", "fetch", "completed"], ["1", "step", "finish", "completed"]]
    assert rows[1][-1] == "200"
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\n"


def test_a_rerun_failing_before_the_changed_step_says_it_failed_there_in_the_body(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "failed at step 3 (the workflow body)", after finish's old record."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    (flow / "flow.py").write_text(FLOW.replace("n * 10", "n * 100"))
    monkeypatch.setenv("FAIL", "1")
    capsys.readouterr()
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 1
    err = capsys.readouterr().err
    assert "run g1 failed at step 2 (position 1, the workflow body): RuntimeError: the body broke\n" in err
    head, rows = _show(capsys, "g1")
    assert head[-2:] == ["steps     1 finished of 2, next position 1", "error     RuntimeError: the body broke"]
    assert [r[:4] for r in rows] == [["0", "step", "fetch", "completed"], ["1", "step", "finish", "changed"]]
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_show_after_a_rebased_run_completed_lists_the_records_it_replayed_as_completed(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A completed run's records are its result's, whatever code made them
    (a rebase replays them deliberately): none is shown `changed`."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    (flow / "flow.py").write_text(FLOW.replace("n * 10", "n * 100"))
    with pytest.warns(UserWarning, match="replaying recorded steps anyway"):
        assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--rebase-checkpoint"]) == 0
    _, rows = _show(capsys, "g1")
    assert [r[3] for r in rows] == ["completed", "completed"]
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_show_of_a_run_stopped_by_ctrl_c_in_a_step_has_a_row_for_that_step(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the table ended at `fetch`; nothing said the run had stopped
    in `finish` (named after the plan of a completed attempt, kept by a fork)."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    assert main(["fork", "g1", "--at", "1", "--new-run-id", "g2"]) == 0
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "g2", "--resume"]) == 130
    head, rows = _show(capsys, "g2")
    assert head[2] == "status    interrupted"
    assert [r[:4] for r in rows] == [["0", "step", "fetch", "completed"], ["1", "step", "finish", "interrupted"]]
    assert rows[1][-1] == "started, no record (its process stopped)"
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\n"


def test_show_of_a_run_stopped_gracefully_has_no_row_for_the_step_it_never_started(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STOP", "graceful")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 130
    head, rows = _show(capsys, "g1")
    assert head[2] == "status    interrupted"
    assert [r[:4] for r in rows] == [["0", "step", "fetch", "completed"]]
    assert (flow / "counts").read_text() == "fetch\n"


@pytest.mark.slow
def test_show_after_a_kill_9_in_a_step_has_a_row_for_the_step_in_flight(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: after a kill -9 in `finish`, the table ended at `fetch`. A
    first attempt leaves no plan to name the step by: what ended last."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "STOP": "kill", "PYTHONPATH": str(root)}
    child = subprocess.run(
        [sys.executable, "-m", "durable", "run", "flow.py:gate", "--run-id", "g1"],
        env=env, capture_output=True, check=False,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL
    head, rows = _show(capsys, "g1")
    assert head[2] == "status    interrupted"
    assert rows == [
        ["0", "step", "fetch", "completed", "1", rows[0][5], "2"],
        ["1", "-", "(not recorded)", "interrupted", "1", "-", "stopped after position 0 (fetch) ended, in the next step or the body"],
    ]
    assert (flow / "counts").read_text() == "fetch\nfinish\n"
