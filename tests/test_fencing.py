"""Nothing is written after the lease is lost (issue 11, item 3): every write
to a run checks the run's lease first, and manifest writes are
compare-and-swap. The real-process test stops a holder on S3 (moto) past its
lease with SIGSTOP; another process takes the run over and completes it; the
first, continued, writes nothing and raises LeaseLostError."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.conftest import ROOT, Place

HOLDER = """
import json, os, sys
import durable

@durable.step(name="work")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # the parent stops us here, then lets us go on
    return f"{i} by {os.getpid()}"

@durable.workflow(name="fence", run_id="shared")
def fence() -> list:
    return [work(i) for i in range(4)]

store = durable.open_store(os.environ["FENCE_STORE"], lease_ttl=float(os.environ["TTL"]))
try:
    run = fence.with_options(store=store, wait=120).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, flush=True)
    sys.exit(4)
print("DONE", json.dumps(run.value), flush=True)
"""


def spawn(script: Path, env: dict[str, str], **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script)],
        env=dict(env, **extra),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def snapshot(store: durable.Store) -> dict[str, bytes]:
    keys = store.list("fence/")
    return store.get_many(keys)


@pytest.mark.slow
def test_a_holder_stopped_past_its_lease_writes_nothing_after_a_takeover(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(FENCE_STORE=s3_url, COUNT_LOG=str(log), TTL="2")
    first = spawn(script, env, HOLD_AT="1")
    assert first.stdout is not None and first.stdin is not None
    try:
        assert first.stdout.readline().strip() == "HOLDING"  # step 0 recorded, 1 running
        os.kill(first.pid, signal.SIGSTOP)
        # The second process waits (wait=120) for the stopped holder's lease to
        # expire, takes the run over and completes it.
        second = spawn(script, env)
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0, out
        tag, _, value = out.strip().partition(" ")
        assert tag == "DONE"
        done = json.loads(value)
        assert done[1:] == [f"{i} by {second.pid}" for i in (1, 2, 3)]
        store = durable.open_store(s3_url)
        before = snapshot(store)
        first.stdin.write("\n")
        first.stdin.flush()
        os.kill(first.pid, signal.SIGCONT)
        said, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
            first.wait()
    assert (first.returncode, said.strip()) == (4, "LEASE_LOST 1")
    # Not one object written, changed or removed by the continued holder.
    assert snapshot(durable.open_store(s3_url)) == before
    (run,) = _listing(s3_url)
    assert (run.run_id, run.status, run.steps) == ("shared", "completed", 4)
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # Step 1 ran in both (the first was stopped inside it); the rest once.
    assert executed == {(0, True): 1, (1, True): 1, (1, False): 1, (2, False): 1, (3, False): 1}


def _listing(url: str) -> list[Any]:
    from durable import _runs

    return _runs.list_runs(durable.open_store(url), "fence")


def test_every_write_checks_the_lease(place: Place) -> None:
    """A store's writes to a run whose lease it lost (another process took
    over) raise LeaseLostError and leave the store as it was."""
    if not place.object_leases:
        pytest.skip("a local lease is lost by its file being deleted: test_lease_file_*")
    store = place.open(lease_ttl=30)
    lease: Any = store.acquire("w", "r", 30)
    store.save_manifest("w", "r", b"m1")
    store.save_record("w", "r", "steps/00000000", b"rec0")
    # Another process takes the run over (as after a long stall).
    takeover = {"host": "elsewhere", "pid": 1, "token": "t", "since": time.time(),
                "expires": time.time() + 60}  # fmt: skip
    store.put(f"w/r/lease/{lease.generation + 1:010d}", json.dumps(takeover).encode())
    lease.lease.fresh_until = 0.0  # as if it had stalled past its lease
    before = place.open().get_many(place.open().list("w/r/"))
    writes = [
        lambda: store.save_record("w", "r", "steps/00000001", b"rec1"),
        lambda: store.replace_record("w", "r", "attempts/00000001", b"a"),
        lambda: store.drop_records("w", "r", ["steps/00000000"]),
        lambda: store.put_blob("w", "r", b"blob"),
        lambda: store.save_manifest("w", "r", b"failed"),
        lambda: store.delete_run("w", "r", keep_lease=True),
    ]
    for write in writes:
        with pytest.raises(durable.LeaseLostError):
            write()
    assert place.open().get_many(place.open().list("w/r/")) == before
    lease.release()  # writes nothing either
    assert place.open().get_many(place.open().list("w/r/")) == before
