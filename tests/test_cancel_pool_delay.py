"""`durable cancel` (another process) of a run whose `loop_over` item waits
its retry delay, its tries made on a thread, process or Dask pool: the
delay was waited on the worker, which did not look for the cancel, so the
run saw it only after the next try, two minutes later. The delay is now
waited in the workflow process, which looks for the marker meanwhile (as
a step's delay and an item's in the workflow's own thread do), and the run
ends `cancelled` at once, without another try."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .clikit import child_env, counts, read_until, spawn, write_flow
from .clikit import durable as durable_cli

pytestmark = pytest.mark.slow

FLAKY = '''
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import durable


@durable.step(retries=3, retry_delay=120)
def flaky(i):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("try\\n")
    print("failed", flush=True)  # its retry delay (two minutes) follows
    raise ConnectionError("flaky")


def pool():
    kind = os.environ["POOL"]
    if kind == "dask":
        import distributed

        return distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None)
    return (ThreadPoolExecutor if kind == "threads" else ProcessPoolExecutor)(2)


@durable.workflow
def tries() -> list:
    with pool() as executor:
        return durable.loop_over(flaky, [0], executor=executor)
'''


@pytest.mark.parametrize("kind", ["threads", "processes", "dask"])
def test_durable_cancel_ends_an_items_retry_delay_on_a_pool(tmp_path: Path, kind: str) -> None:
    if kind == "dask":
        pytest.importorskip("distributed")
    write_flow(tmp_path, FLAKY)
    env = child_env(tmp_path, POOL=kind)
    holder = spawn(tmp_path, "run", "flow.py:tries", "--run-id", "c1", env=env)
    try:
        read_until(holder.stdout, "failed")
        asked = durable_cli(tmp_path, "cancel", "c1", "--json", env=env)  # another process
        assert asked.returncode == 0, asked.stderr
        assert json.loads(asked.stdout)["status"] == "cancelling"
        started = time.monotonic()
        assert holder.wait(timeout=30) == 4
        assert time.monotonic() - started < 20  # the delay is 120 s: it looked meanwhile
        assert b"was cancelled" in holder.stderr.read()  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()
    assert counts(tmp_path) == {"try": 1}
    shown = json.loads(durable_cli(tmp_path, "show", "c1", "--json", env=env).stdout)
    assert shown["status"] == "cancelled"
