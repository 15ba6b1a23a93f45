"""A step the workflow never calls, counted in its definition because its
body uses the step's global name as an attribute (`job.task`) while a
module-level loop left that global bound to the step (`for task in (fetch,
parse):`). It still counts (`x.task` may be this very module's, read
through an alias: fail closed), but the refusal says why it is listed,
where it named a step the workflow never reaches without a word."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import os, types
import durable

@durable.step
def fetch(v):
    return v

@durable.step
def parse(v):
    return v * 2

@durable.step
def report(x):
    if os.environ.get("FAIL"):
        raise RuntimeError("cut short")
    return f"report {x}"

for task in (fetch, parse):
    print(task.__name__)

@durable.workflow(store="store", run_id="r1")
def wf():
    job = types.SimpleNamespace(task="x")
    fetch(1)  # recorded: the run is this code's (one that recorded nothing runs other code)
    return report(job.task)

if __name__ == "__main__":
    print(wf())
"""


def _run(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "flow.py"], cwd=tmp, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip


def test_a_step_reached_only_through_an_attribute_name_is_listed_with_why(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(SCRIPT)
    assert "cut short" in _run(tmp_path, FAIL="1").stderr
    (tmp_path / "flow.py").write_text(SCRIPT.replace("v * 2", "v * 3"))
    refused = _run(tmp_path).stderr
    assert "DefinitionChangedError" in refused
    line = next(ln for ln in refused.splitlines() if ln.startswith("  - parse:"))
    assert "listed because the body names 'task' as an attribute only" in line, line
    assert "If the workflow never calls it, rename the global or the attribute" in line, line
