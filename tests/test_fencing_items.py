"""Nothing is written, and no item started, after the lease is lost, in a
`loop_over` block too: a holder stopped (SIGSTOP) inside an item past its
lease on S3 is taken over; continued, it makes no further try of any item
and writes nothing (its cached step's entry included)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

from .test_fencing import snapshot, stop_take_over_and_go_on

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

HOLDER = """
import json, os, sys
import durable

@durable.step(name="work", cache=os.environ.get("CACHED") == "1", retries=int(os.environ["RETRIES"]))
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # the parent stops us here, then lets us go on
        if os.environ.get("FAIL"):  # the try fails after the takeover: no retry either
            raise ConnectionError("flaky")
    return f"{i} by {os.getpid()}"

@durable.workflow(name="fence", run_id="shared")
def fence() -> list:
    return durable.loop_over(work, range(4), name="items")

store = durable.open_store(os.environ["FENCE_STORE"], lease_ttl=float(os.environ["TTL"]))
try:
    run = fence.with_options(store=store, wait=120).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", flush=True)
    sys.exit(4)
print("DONE", json.dumps(run.value), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cached", "retries", "fail"), [(False, 0, ""), (True, 0, ""), (True, 2, ""), (False, 2, "1")]
)
def test_a_holder_stopped_in_an_item_past_its_lease_goes_no_further(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], cached: bool, retries: int, fail: str
) -> None:
    """With retries too: the lease found lost is no failure of the item to
    try again."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(FENCE_STORE=s3_url, COUNT_LOG=str(log), TTL="2", CACHED="1" if cached else "0")
    env.update(RETRIES=str(retries))
    first, said, before = stop_take_over_and_go_on(script, env, s3_url, clear_cache=True, FAIL=fail)
    assert (first.returncode, said.strip()) == (4, "LEASE_LOST")
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # Item 1 ran in both (the first was stopped inside it); no other item twice.
    assert executed == {
        (0, True): 1, (1, True): 1, (1, False): 1, (2, False): 1, (3, False): 1,
        **({} if cached else {(0, False): 1}),  # uncached, the resume runs item 0 again
    }
    assert snapshot(durable.open_store(s3_url)) == before  # nothing written by the first
