"""Forked children never pin a lease (issue 11, item 1): a process pool made
with the `fork` start method inside a workflow inherits the process's open
files, the run's locked lease file among them. The workflow process is
killed with SIGKILL mid-loop while its orphaned workers live on; an
immediate re-run (no `wait`) must take the run over and finish it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._storage.keys import item_of

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

SCRIPT = """
import concurrent.futures as cf, json, multiprocessing, os, signal, sys
import durable

LOG, STORE = sys.argv[1], sys.argv[2]
POOL = None

@durable.step
def square(i):
    # Tagged with the workflow process's pid (inherited by the workers), so
    # an orphaned worker finishing an item does not count for the re-run.
    with open(LOG, "a") as f:
        f.write(f"{os.environ['POOL_RUN']} {i}\\n")
    return i * i

def crash_when_enough(progress):
    crash_at = int(os.environ.get("CRASH_AT", "0"))  # read now: not a constant
    if crash_at and progress.done == crash_at:
        with open(LOG + ".workers", "w") as f:
            f.write(" ".join(str(p) for p in POOL._processes))
        os.kill(os.getpid(), signal.SIGKILL)

@durable.workflow(store=STORE, run_id="forked")
def fan(n):
    global POOL
    fork = multiprocessing.get_context("fork")  # Linux's default before 3.14
    with cf.ProcessPoolExecutor(2, mp_context=fork) as POOL:
        return durable.loop_over(
            square, range(n), executor=POOL, checkpoint_items=True,
            progress=crash_when_enough,
        )

if __name__ == "__main__":
    os.environ["POOL_RUN"] = str(os.getpid())
    print(json.dumps(fan(24)))
"""


def run(script: Path, log: Path, store: Path, **env: str) -> tuple[int, int, str]:
    """(pid, exit code, stdout). Output goes to files: the orphaned workers
    of a killed run would keep a pipe open forever."""
    out = log.with_suffix(f".out{len(env)}")
    with out.open("w") as sink:
        child = subprocess.Popen(
            [sys.executable, str(script), str(log), str(store)],
            env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        code = child.wait(timeout=120)
    return child.pid, code, out.read_text()


def test_a_forked_pool_worker_does_not_keep_a_killed_run_locked(tmp_path: Path) -> None:
    script, log, store = tmp_path / "fan.py", tmp_path / "executions.log", tmp_path / "store"
    script.write_text(SCRIPT)
    crashed, code, said = run(script, log, store, CRASH_AT="8")
    assert code == -signal.SIGKILL, said
    workers = [int(p) for p in (tmp_path / "executions.log.workers").read_text().split()]
    try:
        assert workers and all(_alive(p) for p in workers)  # orphans, with their copies
        kept = {i for n in durable.open_store(store).peek_records("fan.fan", "forked")
                if (i := item_of(n)) is not None}  # fmt: skip
        assert len(kept) >= 8
        _, code, said = run(script, log, store)  # at once, no wait=
        assert code == 0, said  # not RunLockedError
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert json.loads(said) == [i * i for i in range(24)]
    rows = [line.split() for line in log.read_text().splitlines()]
    by_rerun = Counter(int(i) for pid, i in rows if pid != str(crashed))
    # The re-run executed exactly the items without a checkpoint, once each.
    assert by_rerun == {i: 1 for i in set(range(24)) - {i for _, i in kept}}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
