"""The 42nd new-user walk, on the command line: the row `durable show` has
for a step stopped in a first attempt, and `durable runs`'s STEPS after a
rerun that stopped before its changed step."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from durable._cli.main import main
from tests.clikit import run_cells
from tests.test_newuser41 import FLOW


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _rows(text: str) -> list[list[str]]:
    """A table's rows under its header, each split on runs of 2+ spaces."""
    lines = text.split("\n\n", 1)[-1].splitlines()[1:]
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in lines]


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show_of_a_first_attempt_stopped_in_a_step_says_what_is_known_of_it(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `1  -  ?  interrupted  1  -  started, no record (its process
    stopped)`: a `?` for a name, and "started" said of something nothing
    recorded. Known: where it stopped, after which step, and why no name."""
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 130
    rows = _rows(_out(capsys, "show", "g1"))
    assert rows[0][:4] == ["0", "step", "fetch", "completed"]
    assert rows[1] == [
        "1", "-", "(not recorded)", "interrupted", "1", "-",
        "stopped after position 0 (fetch) ended, in the next step or the body",
    ]  # fmt: skip
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_runs_counts_the_steps_show_counts_after_a_rerun_stopped_before_its_changed_step(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `durable runs` said STEPS 2 (and --json completedSteps 2,
    currentStep 2) where `durable show` says `1 finished, next position 1`:
    finish's record is of the code before the edit, no resume replays it."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    assert main(["run", "flow.py:gate", "--run-id", "g2"]) == 0
    (flow / "flow.py").write_text(FLOW.replace("n * 10", "n * 100"))
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume", "--on-change", "rerun"]) == 3
    assert "steps     1 finished of 2, next position 1" in _out(capsys, "show", "g1")
    listed = {r[1]: r for r in _rows(_out(capsys, "runs"))}
    assert [listed["g1"][2:4], listed["g2"][2:4]] == [["suspended", "1"], ["completed", "2"]]
    docs = {d["runId"]: d for d in json.loads(_out(capsys, "runs", "--json"))}
    assert (docs["g1"]["completedSteps"], docs["g1"]["currentStep"]) == (1, 1)
    assert (docs["g2"]["completedSteps"], docs["g2"]["currentStep"]) == (2, None)
    # A fork copying finish's old record (at 2: a rebase of the fork may want it) too.
    assert main(["fork", "g1", "--at", "2", "--new-run-id", "g3"]) == 0
    assert "steps     1 finished of 2, next position 1" in _out(capsys, "show", "g3")
    assert {r[1]: r[2:4] for r in _rows(_out(capsys, "runs"))}["g3"] == ["forked", "1"]
    assert (flow / "counts").read_text() == "fetch\nfinish\nfetch\nfinish\n"


TWICE = """\
import signal

import durable


@durable.step
def load(n: int) -> int:
    with open("counts", "a") as f:
        f.write("load\\n")
    signal.raise_signal(signal.SIGINT)  # Ctrl-C: load finishes and is recorded...
    signal.raise_signal(signal.SIGINT)  # ...Ctrl-C again: it stops at once, here
    return n


@durable.workflow
def twice(n: int = 1) -> int:
    return load(n)
"""


def test_show_of_a_run_stopped_at_once_by_a_second_ctrl_c_has_a_row_for_the_step_it_stopped_in(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the second SIGINT's stop read as the first's ("Stopped: stopped
    by SIGINT"), a graceful stop between two steps, and the table was empty:
    nothing said the run had stopped in `load`."""
    (flow / "twice.py").write_text(TWICE)
    assert main(["run", "twice.py:twice", "--run-id", "t1"]) == 130
    text = _out(capsys, "show", "t1")
    assert "error     Stopped: stopped at once by a second SIGINT (exit code 130)" in text
    assert _rows(text) == [
        ["0", "-", "(not recorded)", "interrupted", "1", "-", "stopped in the first step or the body, before any step ended"],
    ]  # fmt: skip
    assert (flow / "counts").read_text() == "load\n"


def test_show_and_fork_name_the_script_and_function_to_run(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `continue with: durable run FILE.py:FUNCTION ...` and a note
    that FILE.py and FUNCTION were to be found, where the run's manifest
    names its body `flow.py:gate` (the identity it was fingerprinted under)."""
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 130
    capsys.readouterr()
    assert main(["show", "g1"]) == 0
    assert capsys.readouterr().err == "  continue with: durable run flow.py:gate --run-id g1 --resume\n"
    assert main(["fork", "g1", "--at", "1", "--new-run-id", "g2"]) == 0
    err = capsys.readouterr().err
    assert err.endswith("\n  run it with: durable run flow.py:gate --run-id g2 --resume\n"), err
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


CELLS = [
    "import durable",
    '@durable.step\ndef fetch(n):\n    return n + 1\n\n\n'
    '@durable.workflow\ndef pipe(n):\n    x = fetch(n)\n    durable.suspend("too big")\n    return x',
    'try:\n    pipe.with_options(run_id="nb1")(1)\nexcept durable.Suspended:\n    print("suspended")',
]


@pytest.mark.slow
def test_show_of_a_notebook_run_says_to_continue_in_the_notebook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run FILE.py:FUNCTION --run-id nb1
    --resume --var NAME=VALUE`, for a workflow defined in a notebook cell,
    which no script defines and `durable run` cannot load."""
    assert run_cells(tmp_path, CELLS).stdout == "suspended\n"
    capsys.readouterr()
    assert main(["--store", str(tmp_path / "store"), "show", "nb1"]) == 0
    assert capsys.readouterr().err == (
        "  continue in the notebook or session that defines pipe (no script does, for durable run): "
        "pipe.resume('nb1', NAME=VALUE)\n"
    )
    assert main(["--store", str(tmp_path / "store"), "fork", "nb1", "--at", "1", "--new-run-id", "nb2"]) == 0
    assert capsys.readouterr().err.endswith(  # the fork reaches nb1's suspend() again: as `show` says
        "\n  run it in the notebook or session that defines pipe (no script does, for durable run): "
        "pipe.resume('nb2', NAME=VALUE)\n"
    )


def test_a_mistyped_command_is_told_the_command_meant(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `invalid choice: 'shwo' (choose from 'runs', 'show', ...)`
    alone, where an option mistyped is told the one meant."""
    with pytest.raises(SystemExit) as exit:
        main(["shwo", "r1"])
    assert exit.value.code == 2
    assert capsys.readouterr().err.endswith("; did you mean show? (durable show r1)\n")


def test_a_completed_run_run_again_says_its_value_follows_and_nothing_between(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `run g1 had already completed; its recorded value:`, then
    `run g1 completed`, then the value: the line the colon announced was
    another line of the report."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    capsys.readouterr()
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 0
    said = capsys.readouterr()
    assert (said.err, said.out) == ("run g1 had already completed; its recorded value:\n", "20\n")
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_fork_help_gives_the_durability_defaults_a_fork_has(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `(default: the workflow's, else the store's, else
    durable.configure(), ...)`: a fork loads no workflow and runs no code of
    the user's, so neither of those can set it."""
    with pytest.raises(SystemExit) as exit:
        main(["fork", "--help"])
    assert exit.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "store (default: $DURABLE_DURABILITY, else fsync)" in said


def test_show_names_the_module_and_function_of_a_module_s_workflow(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: FILE.py:FUNCTION to be filled in, for a run of the workflow
    `gate` of the module `flow42mod` (its body's identity `flow42mod.gate`)."""
    (flow / "flow42mod.py").write_text(FLOW)
    monkeypatch.setenv("STOP", "ctrl-c")
    monkeypatch.delitem(sys.modules, "flow42mod", raising=False)
    assert main(["run", "flow42mod:gate", "--run-id", "m1"]) == 130
    monkeypatch.delitem(sys.modules, "flow42mod", raising=False)
    capsys.readouterr()
    assert main(["show", "m1"]) == 0
    assert capsys.readouterr().err == "  continue with: durable run flow42mod:gate --run-id m1 --resume\n"
    monkeypatch.delenv("STOP")
    assert main(["run", "flow42mod:gate", "--run-id", "m1", "--resume"]) == 0
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\n"


def test_a_run_id_given_in_another_case_is_told_the_one_meant(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `no run 'g1' in store ...; `durable runs` lists its runs`,
    for the run `G1` (difflib's 0.8 cutoff leaves short ids unmatched)."""
    assert main(["run", "flow.py:gate", "--run-id", "G1"]) == 0
    capsys.readouterr()
    assert main(["show", "g1"]) == 2
    assert "; did you mean G1? `durable runs` lists its runs" in capsys.readouterr().err
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume"]) == 2
    assert capsys.readouterr().err.endswith(" Did you mean 'G1'?\n")
    assert (flow / "counts").read_text() == "fetch\nfinish\n"


def test_a_failed_run_names_the_position_show_lists_its_step_at(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `run g1 failed at step 2 (the workflow body)`, where `durable
    show` lists positions from 0 (POS 1 there): a suspended run's line gives
    both, `suspended at step 2 (position 1)`."""
    monkeypatch.setenv("FAIL", "1")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 1
    err = capsys.readouterr().err
    assert "run g1 failed at step 2 (position 1, the workflow body): RuntimeError: the body broke\n" in err
    assert "steps     1 finished, next position 1\n" in _out(capsys, "show", "g1")
    assert (flow / "counts").read_text() == "fetch\n"


THREE = """\
import os

import durable


@durable.step
def a(n: int) -> int:
    return n + 1


@durable.step
def b(n: int) -> int:
    return n * 10


@durable.step
def c(n: int) -> int:
    with open("counts", "a") as f:
        f.write("c\\n")
    return n - 1


@durable.workflow
def w(n: int = 1) -> int:
    x = a(n)
    if os.environ.get("HOLD"):
        durable.suspend("held")
    return c(b(x))
"""


def test_show_after_a_rerun_stopped_before_a_changed_step_lists_the_steps_after_it_as_not_finished(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `c`, after the edited `b`, was listed `completed` with its old
    output (19, made from b's old 20) and counted finished (`2 finished of
    3`), though the resume runs it again: a rerun discards every record
    from the first changed step on, and no resume but a rebase replays it."""
    (flow / "three.py").write_text(THREE)
    assert main(["run", "three.py:w", "--run-id", "x"]) == 0
    (flow / "three.py").write_text(THREE.replace("n * 10", "n * 100"))
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "three.py:w", "--run-id", "x", "--resume", "--on-change", "rerun"]) == 3
    text = _out(capsys, "show", "x")
    assert "steps     1 finished of 3, next position 1\n" in text
    assert [r[:4] + r[-1:] for r in _rows(text)[2:]] == [
        ["1", "step", "b", "changed", "code changed since it ran (was: 20)"],
        ["2", "step", "c", "changed", "after a changed step: runs again (was: 19)"],
    ]
    assert {r[1]: r[3] for r in _rows(_out(capsys, "runs"))}["x"] == "1"
    monkeypatch.delenv("HOLD")
    assert main(["run", "three.py:w", "--run-id", "x", "--resume", "--on-change", "rerun"]) == 0
    assert (flow / "counts").read_text() == "c\nc\n"
