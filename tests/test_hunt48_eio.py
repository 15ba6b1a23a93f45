"""An I/O error (EIO) from the disk on a record's write or its fdatasync,
injected into a real child process at the system call (`strace
--inject`): the run stops with a `StorageError` that says what the error
is and what to do (it said only "[Errno 5] Input/output error"); the
resume replays every record written, the one whose sync failed too, and
runs each other step once. (An EIO on the log's write held as well in the
trials: the step whose record failed runs again, once.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, sys, durable

@durable.step
def s(i: int) -> int:
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(name="w", run_id="r")
def w() -> int:
    return sum(s(i) for i in range(6))

try:
    print("value", w.with_options(store=sys.argv[1])())
except durable.StorageError as e:
    print("raised", e)
"""


def test_an_io_error_on_a_record_sync_is_said_and_resumed(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace injects the error: not installed")
    flow, ran = tmp_path / "flow.py", tmp_path / "ran.log"
    flow.write_text(FLOW)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAN=str(ran))
    store = str(tmp_path / "s")
    fault = "--inject=fdatasync:error=EIO:when=3"  # a record's: manifests use fsync
    first = subprocess.run(
        [strace, "-f", "-qq", "-o", os.devnull, fault, sys.executable, str(flow), store],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if not first.stdout:
        pytest.skip(f"strace cannot trace here: {first.stderr.strip()[:200]}")
    said = first.stdout
    assert said.startswith("raised") and "Input/output error" in said, said
    assert "disk reported an I/O error" in said  # was: the errno's text alone
    before = ran.read_text().split()
    again = subprocess.run(
        [sys.executable, str(flow), store], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.stdout.split() == ["value", "150"], again.stdout + again.stderr
    # Each step ran once: the one whose sync failed has its record in the log.
    assert sorted(before + ran.read_text().split()[len(before) :]) == [str(i) for i in range(6)]
