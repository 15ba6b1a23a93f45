"""A lease renewal on S3 that fails (one request failed or timed out, or
answered with an error after S3 stored the new generation) is tried again
while the lease is surely still ours: the run goes on, each step executed
once. Renewals that keep failing until then lose the lease: the holder
stops with `LeaseLostError`, another process takes the run over, and the
first writes nothing more (tests/test_fencing.py for the stalled holder)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT
from tests.test_fencing import snapshot, spawn, takes_over

from . import s3proxy

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

# One try a request (no backoff of the client's own): the request the proxy
# fails is the renewal's failure, at once.
ONE_TRY = {"config_kwargs": {"retries": {"total_max_attempts": 1}}}

HOLDER = """
import json, os, sys
import s3fs
import durable

s3fs.S3FileSystem.retries = 1

@durable.step(name="work")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # the parent lets us go on
    return f"{i} by {os.getpid()}"

@durable.workflow(name="fence", run_id="shared")
def fence() -> list:
    return [work(i) for i in range(4)]

options = json.loads(os.environ["STORE_OPTIONS"])
store = durable.open_store(os.environ["FENCE_STORE"], lease_ttl=2, **options)
try:
    run = fence.with_options(store=store, wait=120).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, str(e).replace("\\n", " "), flush=True)
    sys.exit(4)
print("DONE", json.dumps(run.value), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["500-before", "500-after", "reset-after"])
def test_a_lease_renewal_that_fails_once_is_tried_again_and_the_run_completes(
    s3_url: str, proxy: tuple[str, s3proxy.Faults], how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"500-after" and "reset-after": S3 stored the renewal's generation,
    its answer was lost; the next renewal found the holder's own newest
    generation and took it for another holder's."""
    import s3fs

    from durable._storage import objectlease

    endpoint, faults = proxy
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    # Renewed every second (tried again 0.3 s after a failure), as a lease
    # of 3 s is, but trusted for 20 s: one of 3 s, trusted for 2, was lost
    # on a loaded machine before the renewal tried again had gone through.
    monkeypatch.setattr(objectlease, "RENEW_EVERY", 1 / 30)
    monkeypatch.setattr(objectlease, "RETRY_EVERY", 1 / 100)
    store = durable.open_store(
        s3_url, endpoint_url=endpoint, lease_ttl=30, skip_instance_cache=True, **ONE_TRY
    )
    executed: Counter[int] = Counter()
    faults.fail(2, how, match="/lease/")  # the first renewal's claim (the first: the lease)

    @durable.step(name="work")
    def work(i: int) -> int:
        executed[i] += 1
        if i == 1:  # the run goes on only once a renewal after the failed one went through
            assert faults.passed.wait(30), faults.hit
        return i * 10

    @durable.workflow(store=store, run_id="r", name="renewed")
    def flow() -> list[int]:
        return [work(i) for i in range(3)]

    assert flow() == [0, 10, 20]
    assert [h.rsplit("/", 1)[-1] for h in faults.hit] == ["0000000002"]
    assert executed == {0: 1, 1: 1, 2: 1}
    assert flow() == [0, 10, 20]  # replayed
    assert executed == {0: 1, 1: 1, 2: 1}


@pytest.mark.slow
def test_renewals_failing_past_the_lease_lose_it_and_the_holder_writes_nothing_more(
    tmp_path: Path, s3_url: str, proxy: tuple[str, s3proxy.Faults]
) -> None:
    endpoint, faults = proxy
    script, log = tmp_path / "holder.py", tmp_path / "executions.log"
    script.write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", FENCE_STORE=s3_url)
    env.update(COUNT_LOG=str(log), STORE_OPTIONS="{}")
    first = spawn(script, env, AWS_ENDPOINT_URL=endpoint, HOLD_AT="1",
                  STORE_OPTIONS=json.dumps(ONE_TRY))  # fmt: skip
    assert first.stdout is not None and first.stdin is not None
    try:
        assert first.stdout.readline().strip() == "HOLDING"  # 0 recorded, 1 running
        # Every request for the run's lease fails from now on, for the first
        # process only: its renewals, and the look a write takes at the lease.
        faults.deny("fence/shared/lease/", how="500-before")
        takes_over(script, env)
        before = snapshot(durable.open_store(s3_url, skip_instance_cache=True))
        first.stdin.write("\n")
        first.stdin.flush()
        said, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert (first.returncode, said.split()[:2]) == (4, ["LEASE_LOST", "1"]), said
    assert "could not be renewed" in said
    # Not one object written, changed or removed by the first process.
    assert snapshot(durable.open_store(s3_url, skip_instance_cache=True)) == before
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # Step 1 ran in both (the first was inside it when it lost the lease); the rest once.
    assert executed == {(0, True): 1, (1, True): 1, (1, False): 1, (2, False): 1, (3, False): 1}
