"""After an fdatasync of a run's log fails (EIO), a later one may report
success for pages the kernel dropped with the error (the "fsyncgate"
problem): such a success proves nothing about the bytes written before.
A body that caught the step's `StorageError` went on: later steps ran,
their records were synced "successfully" and the run completed, its
manifest claiming the whole log durable, the failed record included.
Now a failed sync ends the run: nothing is recorded after it, the steps
after it do not run, the run's end claims nothing synced past what a sync
covered before the failure; under "batch" too (a sync due later that
failed is raised by the next write, not forgotten)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from durable._storage.durability import Syncer
from tests.conftest import ROOT

FLOW = """
import os, sys, durable

@durable.step
def s(i: int) -> int:
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(name="w", run_id="r")
def w() -> int:
    total = 0
    for i in range(6):
        try:
            total += s(i)
        except durable.StorageError:  # a user's own handling: the run goes on
            print("caught", i, flush=True)
    return total

store = durable.open_store(sys.argv[1], durability=sys.argv[2], sync_interval=1e-9)
try:
    print("value", w.with_options(store=store)())
except durable.StorageError as e:
    print("raised", e)
"""


@pytest.mark.slow
@pytest.mark.parametrize("level", ["fsync", "batch"])
def test_nothing_is_recorded_after_a_failed_sync(tmp_path: Path, level: str) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace injects the error: not installed")
    flow, ran = tmp_path / "flow.py", tmp_path / "ran.log"
    flow.write_text(FLOW)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAN=str(ran))
    fault = "--inject=fdatasync:error=EIO:when=3"  # a record's (manifests use fsync); later ones succeed
    done = subprocess.run(
        [strace, "-f", "-qq", "-o", os.devnull, fault, sys.executable, str(flow), str(tmp_path / "s"), level],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if not done.stdout:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    lines = done.stdout.splitlines()
    # The step whose record's sync failed raised; the body caught it and
    # called the next steps, each refused before it ran: the run failed.
    assert lines[0].startswith("caught"), done.stdout
    failed = int(lines[0].split()[1])
    assert lines[:-1] == [f"caught {i}" for i in range(failed, 6)], done.stdout
    assert lines[-1].startswith("raised") and "Input/output error" in lines[-1], done.stdout
    assert ran.read_text().split() == [str(i) for i in range(failed + 1)]


def test_a_failed_sync_due_later_is_raised_by_the_next_write() -> None:
    """Under "batch" a sync due later runs on a timer thread, whose error
    was dropped ("met again by the next sync", which may succeed)."""
    calls: list[int] = []

    def sync() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")

    syncer = Syncer("batch", 3600.0)
    syncer.written = 100
    syncer._due(sync, syncer._due_token)  # the timer's sync, as `_arm` set it up
    assert calls == [1] and syncer.synced == 0
    syncer.written = 200
    for call in (lambda: syncer.after_write(sync, 200), lambda: syncer.flush(sync)):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.EIO
    assert calls == [1] and syncer.synced == 0  # never synced again: a success would prove nothing
