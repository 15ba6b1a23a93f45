"""A cached step's entry whose PUT arrives late, after its holder lost the
run's lease: the holder checked its lease, sent the entry, and the request
stalled in the network with its lease renewals while another process took
the run over and completed it, and the cache was cleared (`durable cache
clear`: the step's outside data changed). The late create-only PUT found no
entry and landed, and the next run was served the value computed before the
clear, which no run recorded. The holder now checks its lease again once
its entry is written, and removes the entry it wrote when the lease was
lost (LeaseLostError, as for its record)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import cache as cache_manage
from tests import forkcli
from tests.conftest import ROOT

from . import s3proxy

HOLDER = """
import json, os, sys
import durable

@durable.step(name="work", cache=True)
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    return f"{i} by {os.getpid()}"

@durable.workflow(name="cached", run_id=sys.argv[2])
def cached() -> list:
    return BODY

store = durable.open_store(sys.argv[1], lease_ttl=2)
try:
    print("DONE", json.dumps(cached.with_options(store=store, wait=60)()), flush=True)
except durable.LeaseLostError:
    print("LEASE_LOST", flush=True)
"""


@pytest.mark.slow
# The step at a position of the run, and as a loop_over item (kept like a
# plain call of the step, on the run's behalf: fenced the same way).
@pytest.mark.parametrize("body", ["[work(0)]", "durable.loop_over(work, [0])"])
def test_a_cache_entry_arriving_after_the_lease_was_lost_is_never_served(
    tmp_path: Path, s3_url: str, proxy: tuple[str, s3proxy.Faults], body: str
) -> None:
    endpoint, faults = proxy
    script, log = tmp_path / "holder.py", tmp_path / "executions.log"
    script.write_text(HOLDER.replace("BODY", body))
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), PYTHONUNBUFFERED="1")

    def holder(via: str, run_id: str = "r") -> subprocess.Popen[str] | forkcli.Forked:
        return forkcli.popen([str(script), s3_url, run_id], tmp_path, dict(env, AWS_ENDPOINT_URL=via))

    direct = os.environ["AWS_ENDPOINT_URL"]
    faults.hold("/cache/entries/")  # the entry's PUT, then every PUT after it
    first = holder(endpoint)
    try:
        assert faults.held.wait(60)
        # Its renewals held too, the first holder's lease runs out: a second
        # process takes the run over and completes it; then the cache is cleared.
        second, _ = holder(direct).communicate(timeout=120)
        assert second.startswith("DONE"), second
        store = durable.open_store(s3_url, skip_instance_cache=True)
        cache_manage.clear(store)
    finally:
        faults.release()  # the held requests arrive now
        said, _ = first.communicate(timeout=120)
    assert said.strip() == "LEASE_LOST"
    # Another run computes the step afresh: not served the first holder's
    # value, computed before the clear by a process that had lost the run.
    third, _ = holder(direct, "other").communicate(timeout=120)
    executions = [line.split() for line in log.read_text().splitlines()]
    assert len(executions) == 3, executions
    assert third.strip() == f'DONE ["0 by {third_pid(executions)}"]'


def third_pid(executions: list[list[str]]) -> str:
    return executions[-1][1]


def test_a_late_entry_that_cannot_be_taken_back_still_says_the_lease_was_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The take-back's own store error used to replace the LeaseLostError
    (the caller saw a storage failure, not that another process has the
    run); now the lease loss is raised and the entry left behind is warned
    about, with the command that removes it."""
    from durable._core import cache as engine_cache
    from durable._storage import cachestore
    from durable.errors import LeaseLostError, StorageError

    store = durable.open_store(f"memory://take-back-{os.getpid()}-{id(monkeypatch)}")
    runs: list[int] = []

    @durable.step(name="work", cache=True)
    def work(i: int) -> int:
        runs.append(i)
        return i * 2

    @durable.workflow(name="taken", store=store, run_id="r1")
    def taken() -> int:
        return work(3)

    fence, calls = engine_cache.fence, []

    def lost_once_written(ctx: Any, position: Any) -> None:
        calls.append(position)
        if len(calls) == 2:  # the check once the entry is written
            raise LeaseLostError("r1", position, written=True)
        fence(ctx, position)

    def failing_remove(store: Any, keys: list[str]) -> None:
        raise StorageError("memory://", "the network went away")

    monkeypatch.setattr(engine_cache, "fence", lost_once_written)
    monkeypatch.setattr(cachestore, "remove", failing_remove)
    with pytest.warns(RuntimeWarning, match="durable cache clear work"):
        with pytest.raises(LeaseLostError):
            taken()
    assert runs == [3] and len(calls) == 2
    monkeypatch.undo()
    assert len(cache_manage.list_entries(store)) == 1  # left behind, as the warning says
    cache_manage.clear(store, "work")
    assert cache_manage.list_entries(store) == []
