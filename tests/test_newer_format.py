"""A store shared with a newer version of durable (a teammate upgraded
first): a run it wrote is intact, only unreadable here. It must not be
called damaged, nor offered to --restart or `durable rm`, nor be removed
by gc; a newer version still resumes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

# The same workflow, run by "a newer durable": this one with its record
# and manifest format numbers raised (each to its next), in its own process.
SCRIPT = """
import os, sys
import durable
from durable._storage import manifest, records

records.FORMAT = 2
manifest.FORMAT_WITHOUT_TOKEN = manifest.MANIFEST_FORMAT = 3

@durable.step
def fetch(n: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write("fetch\\n")
    return n + 1

@durable.workflow(name="report", run_id="shared")
def report(n: int) -> int:
    return fetch(n) * 2

run = report.with_options(store=durable.open_store(sys.argv[1])).run(1)
print(run.value, run.steps_replayed, run.steps_executed)
"""


def newer(tmp_path: Path, store: Path, log: Path) -> str:
    script = tmp_path / "newer.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log))
    out = subprocess.run(
        [sys.executable, str(script), str(store)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_run_written_by_a_newer_version_is_kept_and_explained(tmp_path: Path) -> None:
    path, log = tmp_path / "store", tmp_path / "executions.log"
    assert newer(tmp_path, path, log) == "4 0 1"
    store = durable.open_store(path)

    @durable.step
    def fetch(n: int) -> int:
        log.open("a").write("old fetch\n")
        return n + 1

    @durable.workflow(name="report", run_id="shared", store=store)
    def report(n: int) -> int:
        return fetch(n) * 2

    with pytest.raises(durable.CorruptRecordError) as refused:
        report(1)
    message = str(refused.value)
    assert "newer version of durable" in message and "upgrade" in message, message
    assert "restart" not in message and "durable rm" not in message, message
    (info,) = report.runs()
    assert info.status == "newer" and "newer version" in (info.error or "")
    assert durable.gc(store, status="corrupt") == []
    assert durable.gc(store, keep_last=0) == []
    assert log.read_text().split() == ["fetch"]
    # Intact: the newer version answers from its record, nothing runs again.
    assert newer(tmp_path, path, log) == "4 0 0"
    assert log.read_text().split() == ["fetch"]
