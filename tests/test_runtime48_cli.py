"""`durable run flow.py:report` of a workflow whose `run_id=lambda day, n:
f"report-{day}"` made the id was refused with no word of that: the command
computed the id and handed it on as if typed, so the note newuser50 gave
the Python API (`_api/chosen`) never came. `durable show --workflow` with
no value said "--workflow takes W", a letter."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """\
import durable


@durable.step
def fetch(n: int) -> int:
    with open("counts", "a") as f:
        f.write(f"fetch {n}\\n")
    return n


@durable.workflow(run_id=lambda day, n: f"report-{day}")
def report(day: str, n: int) -> int:
    return fetch(n)
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow48.py").write_text(FLOW)
    yield tmp_path
    sys.modules.pop("flow48", None)


def test_a_refusal_of_a_run_whose_id_run_id_made_says_so_on_the_command_line(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "flow48.py:report", "--var", "day=mon", "--var", "n=1"]) == 0
    capsys.readouterr()
    assert main(["run", "flow48.py:report", "--var", "day=mon", "--var", "n=2"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert (
        "The run id 'report-mon' was not given: the workflow's run_id= function made it from this "
        "call's arguments (day='mon', n=2). n differs from the run's, yet the id is the same: make "
        "run_id= read it too, so that such calls are runs of their own, or give this call its own "
        "id with --run-id ID." in err
    ), err
    # An id typed is the user's own: nothing to add.
    assert main(["run", "flow48.py:report", "--var", "day=mon", "--var", "n=2", "--run-id", "report-mon"]) == 2
    assert "run_id= function" not in capsys.readouterr().err
    assert (flow / "counts").read_text().split("\n")[:-1] == ["fetch 1"]


def test_an_option_given_without_its_workflow_says_to_pass_a_workflow_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["show", "r1", "--workflow"])
    err = capsys.readouterr().err
    assert "takes W:" not in err, err
    assert "--workflow takes WORKFLOW (the run's workflow, when the run id exists under several workflows)" in err
    assert "show r1 --workflow WORKFLOW" in err, err
