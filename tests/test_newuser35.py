"""The 35th new-user walk: rough edges of the `durable` command found by
following the docs and then going off the path. Each test drives the real
command in a child process and checks that nothing recorded is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from .clikit import ALL_STEPS, PIPELINE_RESULT, counts, durable, runs_json, show_json, write_flow

pytestmark = pytest.mark.slow

GATE = """
import os

import durable


@durable.step
def prep(x: int) -> int:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("prep\\n")
    return x


@durable.workflow
def gate(x: int = 1) -> str:
    prep(x)
    first = durable.wait_for("decision")
    second = durable.wait_for("decision")
    return f"{first},{second}"
"""


def test_a_var_given_twice_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Before: `durable run flow.py:pipeline --var n=1 --var n=5` ran
    pipeline(n=5), silently dropping n=1, and exited 0."""
    write_flow(tmp_path)
    done = durable(tmp_path, "run", "flow.py:pipeline", "--var", "n=1", "--var", "n=5")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --var n is given twice (n=1, then n=5): give each name once"
    )
    assert counts(tmp_path) == {}
    assert runs_json(tmp_path) == []
    ok = durable(tmp_path, "run", "flow.py:pipeline", "--var", "n=1")
    assert (ok.returncode, ok.stdout.strip()) == (0, str(PIPELINE_RESULT))
    assert counts(tmp_path) == ALL_STEPS


def test_an_input_given_twice_is_refused_and_the_run_keeps_waiting(tmp_path: Path) -> None:
    """Before: `--input decision=a --input decision=b` to a run waiting at two
    wait_for("decision") in a row recorded only b for the first wait (one
    resume answers one wait) and suspended again: the a the user typed was
    dropped without a word."""
    write_flow(tmp_path, GATE)
    assert durable(tmp_path, "run", "flow.py:gate", "--run-id", "g1").returncode == 3
    done = durable(
        tmp_path, "run", "flow.py:gate", "--run-id", "g1", "--resume",
        "--input", "decision=a", "--input", "decision=b",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --input decision is given twice (decision=a, then decision=b): give each "
        "name once; one resume answers one wait_for() of a name, the next wait of it is "
        "answered by the next resume"
    )
    doc = show_json(tmp_path, "g1")
    assert (doc["status"], doc["completedSteps"]) == ("suspended", 1)
    for answer, code in (("a", 3), ("b", 0)):
        step = durable(
            tmp_path, "run", "flow.py:gate", "--run-id", "g1", "--resume", "--input",
            f"decision={answer}",
        )  # fmt: skip
        assert step.returncode == code, step.stderr
    assert step.stdout.strip() == '"a,b"'
    assert counts(tmp_path) == {"prep": 1}
