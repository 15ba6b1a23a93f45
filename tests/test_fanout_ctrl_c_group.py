"""A Ctrl-C typed in a terminal reaches the whole foreground process group:
the workflow process and a process pool's workers. The items the workers
were running end with a KeyboardInterrupt of their own, and the workers go
on with the items already queued to them (a process pool's call queue
cannot be cancelled), which finish. Those are kept (checkpoint_items): one
item's KeyboardInterrupt stopped the keeping of the others, which the
resume ran a second time. Real processes, a real SIGINT to the group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .clikit import read_until

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import concurrent.futures as cf, os, sys, time
import durable

STORE, LOG, GO = sys.argv[1], sys.argv[2], sys.argv[3]

@durable.step
def work(i):
    os.write(2, f"started {i}\\n".encode())
    while not os.path.exists(GO):  # a worker's item: it has no stdin to wait on
        time.sleep(0.01)
    with open(LOG, "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(store=STORE, run_id="r1")
def fan(n):
    with cf.ProcessPoolExecutor(2) as pool:
        return durable.loop_over(work, range(n), executor=pool, checkpoint_items=True)

if __name__ == "__main__":
    print(fan(6))
"""


def _start(tmp: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [str(tmp / "store"), str(tmp / "log.txt"), str(tmp / "go")]
    return subprocess.Popen(
        [sys.executable, str(tmp / "fan.py"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp, start_new_session=True,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_a_terminal_ctrl_c_keeps_the_process_pool_items_that_finish(tmp_path: Path) -> None:
    (tmp_path / "fan.py").write_text(SCRIPT)
    child = _start(tmp_path)
    try:
        seen = read_until(child.stderr, "started")
        while seen.count("started") < 2:
            seen += read_until(child.stderr, "started")
        os.killpg(child.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
        read_until(child.stderr, "no other item starts", timeout=30)
        (tmp_path / "go").touch()
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode != 0  # interrupted
    resumed = _start(tmp_path)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err.decode()
    assert out.decode().strip() == "[0, 10, 20, 30, 40, 50]"
    executed = Counter(int(line) for line in (tmp_path / "log.txt").read_text().split())
    assert executed == {i: 1 for i in range(6)}  # none finished twice
