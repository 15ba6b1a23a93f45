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
