"""The 37th new-user walk, in process: run ids that start with `-`,
`--var` for a parameter of a type JSON has no word for, and `durable show`
of a run whose step is still running."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """
import os

import durable


@durable.step
def fetch(repo: str) -> list[str]:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("fetch\\n")
    return ["a", "b"]


@durable.workflow
def release(repo: str, decision: str | None = None) -> str:
    notes = fetch(repo)
    if decision is None:
        durable.suspend("waiting for decision")
    return f"{decision}: {notes}"
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _advised(err: str, label: str) -> list[str]:
    line = next(x for x in err.splitlines() if label in x)
    return shlex.split(line.split(label, 1)[1])


def _usage_error(typed: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(typed)
    assert e.value.code == 2
    return capsys.readouterr().err


def test_a_run_id_that_starts_with_a_dash_is_advised_as_the_shell_and_argparse_take_it(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run flow.py:release --run-id -x
    --resume ...` and `durable show -x`: argparse took `-x` for an option
    ("--run-id: expected one argument", "required: RUN"), so no command
    advised for the run worked as printed, and typing `durable show -x`
    did not say how to name it."""
    assert main(["run", "flow.py:release", "--run-id=-x", "--var", "repo=r"]) == 3
    advised = _advised(capsys.readouterr().err, "continue with: ")
    assert advised[:4] == ["durable", "run", "flow.py:release", "--run-id=-x"]
    err = _usage_error(["show", "-x"], capsys)
    assert "if -x is a run id: durable show -- -x" in err
    err = _usage_error(["run", "flow.py:release", "--run-id", "-x", "--resume"], capsys)
    assert "if -x is its value: durable run flow.py:release --run-id=-x --resume" in err
    assert main(["show", "--", "-x"]) == 0
    assert "continue with: durable run FILE.py:FUNCTION --run-id=-x --resume" in capsys.readouterr().err
    assert main([w.replace("NAME=VALUE", "decision=ok") for w in advised][1:]) == 0
    assert capsys.readouterr().out.strip() == "\"ok: ['a', 'b']\""
    assert main(["run", "flow.py:release", "--run-id=-x", "--var", "repo=other"]) == 2
    err = capsys.readouterr().err
    assert "  read the result it completed with: durable show -- -x\n" in err
    assert main(_advised(err, "read the result it completed with: ")[1:]) == 0
    assert (flow / "counts").read_text() == "fetch\n"
    err = _usage_error(["rm", "r0", "-x"], capsys)
    assert "if -x is a run id: durable rm r0 -- -x" in err
    assert main(["rm", "--", "-x"]) == 0
