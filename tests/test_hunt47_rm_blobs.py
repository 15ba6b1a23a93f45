"""kill -9 at a random point of `durable rm` (delete_run) of a run whose
outputs are blobs, on moto's server, then the run started again under its
id: either the removal had not reached the manifest (the run resumes: its
recorded steps replay from their blobs) or it had (a fresh run: each step
runs once, its blobs in a new incarnation's folder), never a record whose
blob is gone, never a step run twice."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

import durable
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real processes, moto's server

N = 6
ran: list[int] = []
failing = [True]
CHILD = """\
import sys, durable
from durable._manage.delete import delete_run
store = durable.open_store(sys.argv[1], blob_threshold=1024)
print("STARTED", flush=True)
delete_run(store, "rb47", "r")
print("REMOVED", flush=True)
"""


@durable.step(name="out")
def out(i: int) -> bytes:
    ran.append(i)
    if i == N - 1 and failing[0]:
        raise RuntimeError("not yet")
    return bytes([i % 3]) * 60_000  # blobs; 0 and 3 (1 and 4...) the same bytes


@durable.workflow(name="rb47", run_id="r")
def flow() -> list[int]:
    return [len(v) + v[0] for i in range(N) if (v := out(i))]


def test_kill_9_in_a_removal_of_a_run_with_blobs_then_the_run_again(s3_url: str) -> None:
    rng = random.Random(47)
    expected = [60_000 + i % 3 for i in range(N)]
    for trial in range(int(os.environ.get("H47_TRIALS", "2"))):
        store = durable.open_store(s3_url, blob_threshold=1024)
        failing[0] = True
        with pytest.raises(RuntimeError, match="not yet"):
            flow.with_options(store=store, restart=True).run()
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, s3_url], env=dict(os.environ, PYTHONPATH=str(ROOT)),
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None and child.stdout.readline().strip() == "STARTED"
        time.sleep(rng.uniform(0.1, 1.0))  # the fault's timing, not a synchronisation
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
        fresh = durable.open_store(s3_url, blob_threshold=1024)
        kept = fresh.peek_manifest("rb47", "r") is not None
        ran.clear()
        failing[0] = False
        run = flow.with_options(store=fresh).run()
        assert run.value == expected, trial
        assert ran == ([N - 1] if kept else list(range(N))), (trial, kept)
        ran.clear()
        again = flow.with_options(store=durable.open_store(s3_url, blob_threshold=1024)).run()
        assert (again.value, ran) == (expected, []), trial
