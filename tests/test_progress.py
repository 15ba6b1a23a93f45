"""The run's progress bar (tqdm, drawn from the event stream): on a
terminal it counts operations out of the previous attempt's total when one
is known; without a terminal nothing is drawn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .clikit import on_a_terminal

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
import durable
from durable import events
from durable._fanout import progress

progress.DELAY = 0  # draw at once: the run is short

@durable.step
def a(n):
    return n + 1

@durable.step
def b(n):
    return n * 2

@durable.step
def c(n):
    return n - 1  # EDIT

@durable.workflow(store=sys.argv[1], on_change="rerun")
def pipeline(n):
    return c(b(a(n)))

def show(event):
    if isinstance(event, events.RunStarted):
        print("TOTAL", event.steps_total, "REPLAYED", event.replayed, flush=True)

durable.on_event(show)
print("RESULT", pipeline(3))
"""


def test_the_run_bar_counts_out_of_the_previous_total(tmp_path: Path) -> None:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, str(script), str(tmp_path / "store")]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert first.stdout.split("\n")[:2] == ["TOTAL None REPLAYED 0", "RESULT 7"]
    assert first.stderr == ""  # not a terminal: no bar
    script.write_text(SCRIPT.replace("n - 1  # EDIT", "n - 2  # EDIT"))
    stdout, stderr = on_a_terminal(cmd, env)
    assert stdout.split("\n")[:2] == ["TOTAL 3 REPLAYED 2", "RESULT 6"]
    run_bar = [line for line in stderr.replace("\r", "\n").split("\n") if "flow.pipeline-" in line]
    assert run_bar, stderr
    assert "3/3" in run_bar[-1], run_bar[-1]  # two replayed, one executed, of the three before


@pytest.mark.parametrize(("word", "on", "warned"), [
    ("off", False, False), (" No ", False, False), ("1", True, False), ("maybe", True, True),
])
def test_the_progress_variable_reads_the_same_words_as_the_others(
    child_env: dict[str, str], word: str, on: bool, warned: bool
) -> None:
    # Before: "off" (documented for DURABLE_ALLOW_PICKLE) kept the bars on,
    # and a misspelt word did so silently.
    code = "import durable._fanout.progress as p; print(p.bar_enabled)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(child_env, DURABLE_PROGRESS=word),
        capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.split() == [str(on)]
    assert ("DURABLE_PROGRESS must be one of" in done.stderr) is warned
