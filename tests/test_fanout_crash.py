"""A workflow fanning 50 items out to a process pool is killed with SIGKILL
once 30 item results are recorded; the resume runs only what is missing
(with checkpoint_items) or the whole block once (without)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import durable
from tests.fanout_work import item_indexes, records

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

SCRIPT = """
import concurrent.futures as cf, json, multiprocessing, os, signal, sys
import durable

LOG, STORE, MODE = sys.argv[1], sys.argv[2], sys.argv[3]

@durable.step
def cube(item):
    log, i = item
    # Tagged with the workflow process's pid: a worker orphaned by the kill
    # may still finish its item, and that must not count for the resume.
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{os.environ['FANOUT_RUN']} {i}\\n".encode())
    os.close(fd)
    return {"i": i, "cube": i ** 3, "name": f"n{i:02d}"}

def die_with_parent(parent):
    # ProcessPoolExecutor workers never notice their parent's death; without
    # this they would outlive the kill -9 forever.
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)

POOL = None

def crash_when_enough(progress):
    # Called by the workflow process after each item is done (and recorded).
    # Read at call time: a module constant would count in the fingerprint.
    crash_at = int(os.environ["FANOUT_CRASH_AT"])
    if crash_at and progress.done == crash_at:
        with open(LOG + ".workers", "w") as f:
            f.write(" ".join(str(p) for p in POOL._processes))
        os.kill(os.getpid(), signal.SIGKILL)

@durable.workflow(store=STORE, run_id="crash")
def fan(items):
    global POOL
    spawn = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(
        2, mp_context=spawn, initializer=die_with_parent, initargs=(os.getpid(),)
    ) as POOL:
        return durable.loop_over(
            cube, items, executor=POOL,
            checkpoint_items=(MODE == "checkpoint"), progress=crash_when_enough,
        )

if __name__ == "__main__":
    os.environ["FANOUT_RUN"] = str(os.getpid())  # the pool's workers inherit it
    print(json.dumps(fan([(LOG, i) for i in range(50)])))
"""


@dataclass
class Child:
    pid: int
    returncode: int
    stdout: str
    stderr: str


def run_child(tmp: Path, store: Path, mode: str, crash_at: int) -> Child:
    script = tmp / "fan.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_PROGRESS": "0"}
    env["FANOUT_CRASH_AT"] = str(crash_at)
    cmd = [sys.executable, str(script), str(tmp / "log"), str(store), mode]
    # Files, not pipes: a pipe stays open as long as any grandchild holds it.
    with open(tmp / "out", "w+") as out, open(tmp / "err", "w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        proc.wait(timeout=180)
        out.seek(0)
        err.seek(0)
        child = Child(proc.pid, proc.returncode, out.read(), err.read())
    if child.returncode == -signal.SIGKILL:
        await_workers_gone(tmp)
    return child


def await_workers_gone(tmp: Path) -> None:
    """Wait (on pidfds, not by polling) until the killed run's pool workers
    have exited, so nothing of the first run is alive during the resume."""
    for pid in map(int, (tmp / "log.workers").read_text().split()):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], 30)
            assert ready, f"pool worker {pid} outlived the killed workflow process"
        finally:
            os.close(fd)


def executed_by(tmp: Path, child: Child) -> list[int]:
    """Items whose function ran for that workflow process (on its workers)."""
    lines = (tmp / "log").read_text().splitlines()
    return [int(i) for tag, i in (line.split() for line in lines) if tag == str(child.pid)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    tmp = tmp_path_factory.mktemp("whole")
    done = run_child(tmp, tmp / "store", "checkpoint", 0)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def kept_items(store: durable.Store) -> set[int]:
    return item_indexes(store, "fan.fan", "crash")


def test_checkpointed_items_survive_kill_9(tmp_path: Path, uninterrupted: list[object]) -> None:
    store = durable.open_store(str(tmp_path / "store"))
    first = run_child(tmp_path, tmp_path / "store", "checkpoint", 30)
    assert first.returncode == -signal.SIGKILL, first.stderr
    kept = kept_items(store)
    assert len(kept) == 30  # killed right after the 30th item record
    assert records(store, "fan.fan", "crash", "steps") == []  # the block itself never finished

    second = run_child(tmp_path, tmp_path / "store", "checkpoint", 0)
    assert second.returncode == 0, second.stderr
    assert kept <= set(executed_by(tmp_path, first))
    resumed = sorted(executed_by(tmp_path, second))
    assert resumed == sorted(set(range(50)) - kept)  # only the 20 missing, each once
    assert json.loads(second.stdout) == uninterrupted
    assert kept_items(store) == set()  # compacted into the block record
    assert records(store, "fan.fan", "crash", "steps") == ["steps/00000000"]


def test_without_checkpoints_the_block_runs_again_once(
    tmp_path: Path, uninterrupted: list[object]
) -> None:
    store = durable.open_store(str(tmp_path / "store"))
    first = run_child(tmp_path, tmp_path / "store", "whole", 30)
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert kept_items(store) == set()
    assert records(store, "fan.fan", "crash", "steps") == []

    second = run_child(tmp_path, tmp_path / "store", "whole", 0)
    assert second.returncode == 0, second.stderr
    assert len(executed_by(tmp_path, first)) >= 30
    assert sorted(executed_by(tmp_path, second)) == list(range(50))  # the whole block, once
    assert json.loads(second.stdout) == uninterrupted
