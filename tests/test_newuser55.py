"""The 55th new-user walk: `durable.runs()` (as `durable runs` lists) was
a bare AttributeError; `durable run nb.ipynb:wf` ran the notebook's JSON
as Python and said "NameError: name 'null' is not defined". In process:
`main([...])`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

CELLS = [
    "import durable",
    "@durable.step\ndef load(n: int) -> list[int]:\n    with open('counts', 'a') as f:\n"
    "        f.write('load\\n')\n    return list(range(n))",
    "@durable.workflow\ndef analysis(n: int = 3) -> int:\n    return sum(load(n))",
    "analysis(3)",
]


@pytest.mark.parametrize(
    ("name", "call"),
    [("runs", "my_workflow.runs() (`durable runs` lists every workflow's from a shell)"),
     ("history", "my_workflow.history(RUN_ID)"), ("show", "my_workflow.history(RUN_ID)"),
     ("fork", "my_workflow.fork(RUN_ID, at=N)"), ("rm", "my_workflow.delete(RUN_ID)"),
     ("cancel", "my_workflow.cancel(RUN_ID)"), ("recover", "my_workflow.recover()")],
)  # fmt: skip
def test_a_workflow_method_asked_of_the_module_names_the_call(name: str, call: str) -> None:
    """Before: "module 'durable' has no attribute 'runs'", and nothing of
    where the runs are listed from Python."""
    with pytest.raises(AttributeError, match=r"^module 'durable' has no attribute") as caught:
        getattr(durable, name)
    assert str(caught.value).endswith(f"{name!r}: call the method of the workflow, {call}")
    with pytest.raises(AttributeError, match=r"^module 'durable' has no attribute 'nothing_of_the_kind'$"):
        getattr(durable, "nothing_of_the_kind")  # noqa: B009


def test_each_method_named_is_one_a_workflow_has(tmp_path: Path) -> None:
    """The calls the hint names are the workflow's own: each one runs."""
    from durable import _WORKFLOW_METHODS

    @durable.workflow(store=str(tmp_path))
    def wf() -> int:
        return 1

    assert {c.partition("(")[0] for c in _WORKFLOW_METHODS.values()} <= set(dir(wf))
    assert wf.runs() == []


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    cells: list[dict[str, object]] = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
              "source": text} for i, text in enumerate(CELLS)]  # fmt: skip
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "eda.ipynb").write_text(json.dumps(doc, indent=1))
    return tmp_path


@pytest.mark.parametrize("command", [["run", "eda.ipynb:analysis"], ["run", "eda.ipynb:analysis", "--restart"],
                                     ["recover", "eda.ipynb:analysis"]])  # fmt: skip
def test_a_notebook_as_the_target_says_where_its_workflow_runs(
    notebook: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "cannot load eda.ipynb: NameError: name 'null' is not
    defined (eda.ipynb, line 5)": the notebook's JSON run as a script."""
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "cannot load eda.ipynb: it is a notebook, and durable run loads a Python file or module; run " in err
    assert "in the notebook (analysis(...), or analysis.resume(RUN_ID): `durable show RUN` prints" in err
    assert "nothing was run" in err and "NameError" not in err
    assert not (notebook / "counts").exists() and not (notebook / "store").exists()


def test_run_resume_and_fork_give_completed_runs_whose_value_is_the_workflows(tmp_path: Path) -> None:
    """Before: `Run.value` was typed `R | None`, so `wf.run(x).value.upper()`
    was refused by mypy --strict ("Item None of str | None has no attribute
    upper"), though run(), resume() and fork() never return a run without its
    value: the others raise (tests/typing_check.py asserts the types)."""
    executed: list[str] = []

    @durable.step
    def shout(word: str) -> str:
        executed.append(word)
        return word.upper()

    @durable.workflow(store=str(tmp_path))
    def greet(word: str, go: bool = False) -> str:
        said = shout(word)
        if not go:
            durable.suspend("waiting for go")
        return said + "!"

    with pytest.raises(durable.Suspended) as waiting:
        greet.run("hi")
    resumed = greet.resume(waiting.value.run_id, go=True)
    forked = greet.fork(resumed.run_id, at=1)
    again = greet.run("hi", go=True)
    assert [(r.status, r.value.lower()) for r in (resumed, forked, again)] == [("completed", "hi!")] * 3
    assert executed == ["hi", "hi"]  # the fork replays position 0; a new call (go=True) runs it


NIGHTLY = """\
import os

import durable


@durable.step
def a(x: int) -> int:
    with open("counts", "a") as f:
        f.write("a\\n")
    return x + 1


@durable.step
def b(y: int) -> int:
    with open("counts", "a") as f:
        f.write("b\\n")
    if os.environ.get("FAIL"):
        raise RuntimeError("b failed")
    return y * 2


@durable.workflow
def nightly(x: int = 1) -> int:
    return b(a(x))
"""


def test_a_script_started_from_the_folder_above_is_named_by_its_path_from_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: after `durable run jobs/nightly.py:nightly` failed, `durable
    show` in that folder said "`durable run` of nightly.py:nightly with
    --run-id R --resume; nightly.py, the script the run was started from, is
    not in this folder: give its path from here...", though the only
    nightly.py is jobs/nightly.py: the line to paste, with its path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "nightly.py").write_text(NIGHTLY)
    monkeypatch.setenv("FAIL", "1")
    assert main(["run", "jobs/nightly.py:nightly", "--run-id", "n1"]) == 1
    monkeypatch.delenv("FAIL")
    capsys.readouterr()
    assert main(["show", "n1"]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("  continue with: "))
    assert line == "  continue with: durable run jobs/nightly.py:nightly --run-id n1 --resume", line
    assert main(line.split()[3:]) == 0  # pasted
    assert (tmp_path / "counts").read_text().split() == ["a", "b", "b"]
    (tmp_path / "old").mkdir()  # a second nightly.py below: which one is not said, the words stay
    (tmp_path / "old" / "nightly.py").write_text(NIGHTLY)
    monkeypatch.setenv("FAIL", "1")
    assert main(["run", "jobs/nightly.py:nightly", "--run-id", "n2"]) == 1
    capsys.readouterr()
    assert main(["show", "n2"]) == 0
    assert "nightly.py, the script the run was started from, is not in this folder" in capsys.readouterr().err


def test_a_run_not_found_in_a_configured_store_names_it_in_the_command_to_list_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `wf.resume("nope")` on a workflow whose store is
    durable.configure()'s said "(`durable runs flow.wf` lists them)", which
    pasted read ./.durable: "durable: no runs in .durable"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DURABLE_STORE", raising=False)
    executed: list[int] = []

    @durable.step
    def add(x: int) -> int:
        executed.append(x)
        return x + 1

    @durable.workflow(store=str(tmp_path / "team-runs"))
    def wf(x: int = 1) -> int:
        return add(x)

    wf.with_options(run_id="r1")(1)
    for call in (lambda: wf.resume("nope"), lambda: wf.history("nope"), lambda: wf.delete("nope")):
        with pytest.raises(durable.RunNotFoundError) as missing:
            call()
        line = str(missing.value).partition("(`")[2].partition("`")[0]
        assert line == f"durable --store {tmp_path / 'team-runs'} runs {wf.name}", line
        capsys.readouterr()
        assert main(line.split()[1:]) == 0  # pasted: the run is listed
        assert "r1" in capsys.readouterr().out
    assert executed == [1]
