"""Found by a third walk as new users: a team sharing a bucket, a data
scientist in a notebook, an engineer driving runs from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from durable._cli.main import main

WAITS = """
import durable


@durable.step
def build() -> str:
    with open("built", "a") as f:
        f.write("x")
    return "build"


@durable.workflow(run_id="rel")
def release() -> str:
    return f"{build()} {durable.wait_for('version')!r}"
"""


def test_an_input_number_not_given_back_as_typed_is_refused_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--input version=1.10` recorded the float 1.1 as the wait's answer: a
    wait has no annotation to say it takes text, and a recorded answer is
    never replaced, so the run went on for good with a value nobody typed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(WAITS)
    store = str(tmp_path / "runs")
    assert main(["--store", store, "run", "flow.py:release"]) == 3  # suspended at the wait
    for typed in ("1.10", "1e3", "3.14159265358979323846"):
        capsys.readouterr()
        refused = main(["--store", store, "run", "flow.py:release", "--resume",
                        "--input", f"version={typed}"])  # fmt: skip
        said = capsys.readouterr().err
        assert refused == 2, said
        assert f"""--input 'version="{typed}"'""" in said  # how to pass the text
        assert "for the number, write --input version=" in said
    capsys.readouterr()
    assert main(["--store", store, "runs", "--json"]) == 0
    [info] = json.loads(capsys.readouterr().out)
    assert (info["status"], info["completedSteps"]) == ("suspended", 1)  # nothing recorded
    done = main(["--store", store, "run", "flow.py:release", "--resume",
                 "--input", 'version="1.10"'])  # fmt: skip
    assert done == 0
    assert json.loads(capsys.readouterr().out) == "build '1.10'"
    assert (tmp_path / "built").read_text() == "x"  # the step ran once


@pytest.mark.parametrize("typed", ["2", "1.5", "-3", "1.0", "yes", '"1.10"', "[1.10]"])
def test_an_input_given_back_as_typed_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    typed: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(WAITS)
    store = str(tmp_path / "runs")
    assert main(["--store", store, "run", "flow.py:release"]) == 3
    capsys.readouterr()
    assert main(["--store", store, "run", "flow.py:release", "--resume",
                 "--input", f"version={typed}"]) == 0  # fmt: skip
    expected = typed if typed == "yes" else json.loads(typed)
    assert json.loads(capsys.readouterr().out) == f"build {expected!r}"
