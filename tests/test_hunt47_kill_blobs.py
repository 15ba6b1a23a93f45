"""kill -9 at random points of a run whose every output is a blob (some
the same bytes as another step's: one blob for both) on moto's server, and
of one whose large outputs are entries of its local log under "batch",
synced by the timer thread while other entries are appended (the sync's
mark must never cover part of an entry a kill leaves torn: a resume holds
the log to it, `syncmark`); then a resume in this process: its value is the
uninterrupted run's, and each step ran once in all (never again once its
record was durable). More trials: H47_TRIALS=15 (held on this round's
tree: 15 a place, and 15 of the local store with blobs too)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.keys import parse_name
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real processes, moto's server

N = 8
CHILD = """\
import json, sys, durable
from tests import test_hunt47_kill_blobs as m
store = durable.open_store(sys.argv[1], **json.loads(sys.argv[4]))
print("STARTED", flush=True)
m.flow.with_options(store=store, run_id=sys.argv[2]).run(int(sys.argv[3]))
"""


def output(i: int) -> bytes:
    # Steps 4 and 6 return step 2's bytes: one blob, three records point at it.
    return bytes([i if i not in (4, 6) else 2]) * (50_000 + 1000 * (i % 4 if i not in (4, 6) else 2))


@durable.step(name="out")
def out(i: int) -> bytes:
    fd = os.open(os.environ["H47_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()} {i}\n".encode())
    finally:
        os.close(fd)
    return output(i)


@durable.workflow(name="kb47")
def flow(n: int) -> list[int]:
    return [len(v) + v[0] for i in range(n) if (v := out(i))]


def _ran(log: Path) -> Counter[tuple[int, int]]:
    return Counter(tuple(map(int, line.split())) for line in log.read_text().splitlines())  # type: ignore[misc]


# Local "batch": the outputs in the log itself (no blob), a sync due every
# 2 ms from the timer thread, so syncs overlap appends of large entries.
OPTIONS: dict[str, dict[str, Any]] = {
    "s3": {"blob_threshold": 1024},
    "local-batch": {"blob_threshold": 10**7, "durability": "batch", "sync_interval": 0.002},
}


@pytest.mark.parametrize("where", list(OPTIONS))
def test_kill_9_while_blobs_are_written_then_resume(
    where: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = request.getfixturevalue("s3_url") if where == "s3" else str(tmp_path / "runs")
    options = OPTIONS[where]
    log = tmp_path / "ran.log"
    monkeypatch.setenv("H47_LOG", str(log))
    expected = [len(v) + v[0] for i in range(N) if (v := output(i))]
    started = time.perf_counter()
    log.write_text("")
    clean = flow.with_options(store=durable.open_store(url, **options), run_id="clean")
    assert clean.run(N).value == expected
    window = (time.perf_counter() - started) * 1.5 + 0.3  # a child's start too
    rng = random.Random(where)
    bad = []
    for trial in range(int(os.environ.get("H47_TRIALS", "2"))):
        run_id = f"k{trial}-{uuid.uuid4().hex[:6]}"
        log.write_text("")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, run_id, str(N), json.dumps(options)], env=env, cwd=ROOT,
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None and child.stdout.readline().strip() == "STARTED"
        delay = rng.uniform(0, window)
        time.sleep(delay)  # the fault's timing, not a synchronisation
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
        store = durable.open_store(url, **options)
        names = store.peek_records("kb47", run_id)
        done = {p[1] for n in names if (p := parse_name(n)) and p[0] == "steps"}
        try:
            value = flow.with_options(store=store, run_id=run_id).resume(run_id).value
        except durable.RunNotFoundError:
            value = flow.with_options(store=store, run_id=run_id).run(N).value  # killed before its manifest
        ran = _ran(log)
        first = {i for (pid, i) in ran if pid == child.pid}
        second = Counter(i for (pid, i), c in ran.items() if pid == os.getpid() for _ in range(c))
        what = f"trial {trial} killed after {delay * 1000:.0f} ms (done {sorted(done)})"
        if value != expected:
            bad.append(f"{what}: value {value}")
        for i in range(N):
            if second[i] > 1 or (i in done and second[i]) or (i not in done and second[i] != 1):
                bad.append(f"{what}: step {i} ran {second[i]} times on resume (first: {i in first})")
    assert bad == []
