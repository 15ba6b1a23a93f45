"""Writes from another module (`elsewhere`) under pytest and at run time:
a test module pytest loaded, whose running code is not what its text
compiles to (hypothesis's `@given` gives its wrapper the test's file and
line), never refuses a step of another test module; a write there that
reaches what the step reads still counts, by its text. Each case runs a
real pytest (or script) in a child process, counting body executions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
from fractions import Fraction

from hypothesis import given, strategies as st

import settings

settings.RATES = [3]


@given(st.integers(-1000, 1000))
def test_an_integer_is_a_fraction(i):
    assert Fraction.from_float(float(i)) == i
"""
STEP = """
import os
from fractions import Fraction

import durable
import settings


def test_a_step_of_another_test_module_runs_and_replays(tmp_path):
    @durable.step(name="half")
    def half():
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("half\\n")
        return str(Fraction(sum(settings.RATES), 2))

    @durable.workflow(name="w", store=durable.open_store(os.environ["STORE"]), run_id="r")
    def w():
        return half()

    print("result", w(), w())
"""


def child(folder: Path, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        env={
            **os.environ,
            "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "STORE": str(folder / "store"),
            "COUNT_FILE": str(folder / "count"),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def test_a_test_module_pytest_loaded_never_refuses_a_step_of_another(tmp_path: Path) -> None:
    """`Fraction.from_float(...)` in test_writer.py, whose `@given` test runs
    code its text does not compile to: the step reading `Fraction` was
    refused ("edited after import?"). `settings.RATES = [3]` there counts
    for the step reading it (an edit of it is a change), by its text."""
    (tmp_path / "settings.py").write_text("RATES = [1]\n")
    (tmp_path / "test_writer.py").write_text(textwrap.dedent(WRITER).lstrip())
    (tmp_path / "test_step.py").write_text(textwrap.dedent(STEP).lstrip())
    argv = ("-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_writer.py", "test_step.py")
    out = child(tmp_path, *argv)
    assert "2 passed" in out and "result 3/2 3/2" in out, out
    assert (tmp_path / "count").read_text().split() == ["half"]
    writer = tmp_path / "test_writer.py"
    writer.write_text(writer.read_text().replace("[3]", "[5]"))
    out = child(tmp_path, *argv)
    assert "1 failed, 1 passed" in out and "half: global settings.RATES changed" in out, out
    assert (tmp_path / "count").read_text().split() == ["half"]
