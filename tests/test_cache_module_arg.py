"""A module of the user's own code passed to a cached step as an argument
(`apply(helpers)`), edited between two processes: the step runs the
module's code, so the call is another call. It counted by the module's
name only, and the second process was served what the old code gave."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOW = """
import durable, helpers

@durable.step(cache=True)
def apply(module, x):
    with open("count", "a") as f:
        f.write("apply\\n")
    return module.clean(x)

print(apply(helpers, 3))
"""
HELPERS = "FACTOR = 2\n\ndef clean(x):\n    return x * FACTOR\n"


def run(folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "flow.py"],
        cwd=folder,
        env={
            **os.environ,
            "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}",
            "DURABLE_STORE": str(folder / "store"),
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_an_edited_module_argument_is_computed_again(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    (tmp_path / "helpers.py").write_text(HELPERS)
    assert run(tmp_path) == "6"
    assert run(tmp_path) == "6"  # the same module: served
    (tmp_path / "helpers.py").write_text(HELPERS.replace("FACTOR = 2", "FACTOR = 5"))
    assert run(tmp_path) == "15"  # was 6
    (tmp_path / "helpers.py").write_text(HELPERS.replace("x * FACTOR", "x * FACTOR + 1"))
    assert run(tmp_path) == "7"
    assert (tmp_path / "count").read_text().split() == ["apply"] * 3
