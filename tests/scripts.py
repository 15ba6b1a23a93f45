"""A test's own script run in a fresh interpreter, as a user runs it: the
script's folder and this checkout importable, the store (`DURABLE_STORE`,
`STORE`) and the count file its step bodies append to (`COUNT_FILE`) in that
folder. Bytecode is not written: the tests edit the files between runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_in(folder: Path, *argv: str, **env: str) -> str:
    """`python ARGV` in `folder`, `env` added: its stdout and stderr."""
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        env={
            **os.environ,
            "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "STORE": str(folder / "store"),
            "DURABLE_STORE": str(folder / "store"),
            "COUNT_FILE": str(folder / "count"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def suspending(call: str, params: str = "x", given: str = "10") -> str:
    """The end of a script: its workflow `wf(params)` returns `call` (one
    step's), suspending after it when STOP is set, and prints `value ...`
    or `suspended`."""
    return f"""
@durable.workflow(run_id="r1")
def wf({params}):
    out = {call}
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out

try:
    print("value", wf({given}))
except durable.Suspended:
    print("suspended")
"""


def counted(name: str, returns: str) -> str:
    """A step `name(x)` that appends its name to COUNT_FILE and returns `returns`."""
    return f"""
@durable.step
def {name}(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("{name}\\n")
    return {returns}
"""


def edited_env(folder: Path) -> str:
    """flow.py run with K=2 until it suspends after its step, then with K=3:
    what the second run printed."""
    assert "suspended" in run_in(folder, "flow.py", K="2", STOP="1")
    return run_in(folder, "flow.py", K="3")


def refused_then_replayed(folder: Path, old: str) -> None:
    """K edited from 2 to 3 refuses the run (it printed `value {old}` before
    the fix); K back to 2, the same value, replays it."""
    out = edited_env(folder)
    assert "DefinitionChangedError" in out and f"value {old}" not in out
    assert f"value {old}" in run_in(folder, "flow.py", K="2")
