"""`kill -9` of a run inside a checkpointed `loop_over` on an eight-thread
pool under "fsync", while other items commit their checkpoints through one
shared fdatasync (group commit) and the syncs mark what they covered
(`syncmark`): the resume runs each item with no checkpoint once, and no
item whose checkpoint the log kept, and is never refused for a mark past
the entries the kill left whole. (A guard: it held in 40 trials of a kill
at a random item.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, sys, durable
from concurrent.futures import ThreadPoolExecutor

def item(i: int) -> int:
    fd = os.open(os.environ["RAN"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, b"%d\\n" % i)
    os.close(fd)
    if i == int(os.environ.get("KILL_AT", "-1")):
        os.kill(os.getpid(), 9)
    return i * i

@durable.workflow(name="w", run_id="r")
def w() -> int:
    with ThreadPoolExecutor(8) as pool:
        return sum(durable.loop_over(item, range(60), executor=pool, checkpoint_items=True))

store = durable.open_store(sys.argv[1], durability="fsync", sync_interval=1e-9)
print(w.with_options(store=store)())
"""


def test_a_thread_pool_loop_killed_under_fsync_resumes_each_item_once(tmp_path: Path) -> None:
    try:
        os.setxattr(tmp_path, "user.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("no extended attributes here: nothing is marked")
    flow, ran, store = tmp_path / "flow.py", tmp_path / "ran.log", tmp_path / "s"
    flow.write_text(FLOW)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAN=str(ran))
    killed = subprocess.run([sys.executable, str(flow), str(store)], env=dict(env, KILL_AT="30"))
    assert killed.returncode == -signal.SIGKILL
    before = ran.read_text().split()
    kept = {
        int(name.rsplit("/", 1)[-1])
        for name in durable.open_store(store).records("w", "r").names()
        if name.startswith("items/")
    }
    assert kept and len(kept) < 60
    resumed = subprocess.run(
        [sys.executable, str(flow), str(store)], env=env, capture_output=True, text=True
    )
    assert resumed.stdout.split() == [str(sum(i * i for i in range(60)))], resumed.stderr
    again = Counter(int(i) for i in ran.read_text().split()[len(before):])
    assert again == Counter(i for i in range(60) if i not in kept)
