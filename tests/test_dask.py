"""loop_over on a real Dask cluster: a `distributed.LocalCluster` with two
worker processes, started by this module. Executions are counted through
files, since the workers are other processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.fanout_work import (
    deadly,
    expected,
    flaky,
    item_indexes,
    logged,
    picky,
    task_states,
    work,
)

distributed = pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    with distributed.Client(cluster) as client:
        yield client



def test_results_in_order_and_each_item_once(tmp_path: Path, client: Any) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(30)]
    sequential = [work((str(tmp_path / "seq"), i)) for i in range(30)]

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(work, items, executor=client)

    run = fan.run(items)
    assert run.value == sequential == [expected(i) for i in range(30)]
    assert sorted(logged(log)) == list(range(30))
    # Both workers took part: the work really left this process.
    pids = {p for p in client.run(os.getpid).values()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert fan.run(items).value == sequential
    assert len(logged(log)) == 30  # the re-run replayed the block


def test_checkpointed_items_survive_a_failure(tmp_path: Path, client: Any) -> None:
    log = str(tmp_path / "log")
    Path(log + ".fail").write_text("9")
    items = [(log, i) for i in range(16)]
    store = durable.open_store(str(tmp_path / "store"))

    @durable.workflow(store=store, run_id="r1")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(picky, items, executor=client, checkpoint_items=True)

    with pytest.raises(ValueError) as caught:
        fan(items)
    text = "".join(traceback.format_exception(type(caught.value), caught.value, None))
    assert "item 9 (of 16)" in text
    kept = item_indexes(store, fan.name, "r1")
    first = logged(log)
    assert kept == set(first) and 9 not in kept
    Path(log + ".fail").unlink()
    assert fan(items) == [expected(i) for i in range(16)]
    assert sorted(logged(log)[len(first) :]) == sorted(set(range(16)) - kept)
    assert item_indexes(store, fan.name, "r1") == set()


def test_step_retries_run_on_the_worker(tmp_path: Path, client: Any) -> None:
    log = str(tmp_path / "log")

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(n: int) -> list[str]:
        return durable.loop_over(flaky, [(log, i) for i in range(n)], executor=client)

    assert fan(4) == [expected(i) for i in range(4)]
    assert sorted(logged(log)) == sorted(list(range(4)) * 3)


def test_an_item_whose_worker_is_killed_fails_with_killed_worker_and_resumes(
    tmp_path: Path, cluster: Any, client: Any
) -> None:
    """A worker killed (kill -9) in an item: the task fails with Dask's
    KilledWorker (once its worker died more than `allowed-failures` times;
    0 here, so at once), which the item raises as itself, so that
    `retry_on=KilledWorker` and `except KilledWorker` see it. It came out as a
    RuntimeError of the exc_info triple's repr. The resume runs the items
    without a kept result, each once, and no kept one."""
    log = str(tmp_path / "log")
    Path(log + ".kill").write_text("5")
    items = [(log, i) for i in range(8)]

    @durable.workflow(store=str(tmp_path / "store"), run_id="killed")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(deadly, items, executor=client, checkpoint_items=True)

    scheduler = cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    try:
        with pytest.raises(distributed.KilledWorker) as failed:
            fan(items)
    finally:
        scheduler.allowed_failures = allowed
    assert "durable: item" in "".join(traceback.format_exception(failed.value))
    kept = item_indexes(durable.open_store(str(tmp_path / "store")), fan.name, "killed")
    assert 5 not in kept and set(kept) <= set(logged(log))
    first = len(logged(log))
    assert fan(items) == [expected(i) for i in range(8)]
    assert sorted(logged(log)[first:]) == sorted(set(range(8)) - kept)


def test_a_result_received_before_its_worker_died_is_the_items(
    tmp_path: Path, client: Any
) -> None:
    """A result handed over, then its worker killed (kill -9): Dask turns the
    future back to pending (its data is gone), and the block, which read the
    future's status after the result, refused it as a failed task
    (RuntimeError of the result's bytes; seen in the test above, once in
    seven runs). The result that arrived is the item's."""
    from durable._fanout.daskpool import DaskPool
    from durable._fanout.executors import NO_TRACE

    pool = DaskPool(client, work, NO_TRACE)
    (handle,) = pool.submit([(str(tmp_path / "log"), 3)])
    assert pool.wait([handle]) == {handle}  # its result is here
    (holder,) = client.who_has([handle])[handle.key]
    os.kill(client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)
    deadline = time.monotonic() + 60  # a bound on a failure, not a synchronisation
    while handle.status == "finished":
        assert time.monotonic() < deadline, "the worker's death never reached the client"
    assert pool.outcome(handle) == expected(3)
    client.cancel([handle])


DELAYED_SCRIPT = """
import os, sys
import durable
from distributed import Client

@durable.step(retries=1, retry_delay=60)
def body(item):
    log, i = item  # a worker's own sys.argv is not ours: the path travels with the item
    with open(log, "a") as f:
        f.write(f"{os.getpid()} {i}\\n")
    if len(open(log).read().splitlines()) == 1:
        raise ValueError("the first try fails")
    return i

@durable.workflow(store=sys.argv[3], run_id="delayed")
def fan():
    with Client(sys.argv[1]) as client:
        return durable.loop_over(body, [(sys.argv[2], 0)], executor=client)

if __name__ == "__main__":
    fan()
"""


def test_a_task_whose_workflow_dies_in_a_retrys_delay_makes_no_try(
    tmp_path: Path, cluster: Any, client: Any, child_env: dict[str, str]
) -> None:
    """The workflow process killed (kill -9) while an item waits its
    retry_delay: a worker that waited it out made the try all the same once
    the wait was over, with no run holding the item while a resume could
    make it too. The delay is now waited in the workflow process, and the
    try sent once it is over: killed in it, the workflow sent none, and the
    workers hold no task once the first try's is dropped."""
    script, log = tmp_path / "delayed.py", tmp_path / "tries"
    script.write_text(DELAYED_SCRIPT)
    client.wait_for_workers(2, timeout=60)  # one killed by a test above is back
    args = [sys.executable, str(script), cluster.scheduler_address, str(log), str(tmp_path / "s")]
    workflow = subprocess.Popen(args, env=child_env)
    try:
        deadline = time.monotonic() + 60  # bounds on a failure, not synchronisations
        while not log.exists() or not log.read_text():  # the first try failed: the delay follows
            assert workflow.poll() is None and time.monotonic() < deadline
        workflow.kill()
        workflow.wait()
        while states(client):
            assert time.monotonic() < deadline, "the scheduler never dropped the first try's task"
    finally:
        workflow.kill()
    assert len(log.read_text().splitlines()) == 1, log.read_text()


def states(client: Any) -> list[str]:
    """The states of the tasks the workers hold."""
    return [state for held in client.run(task_states).values() for state in held]


MAIN_SCRIPT = """
import json, sys
import durable
from distributed import Client

@durable.step
def shout(item):
    log, word = item  # the worker's own sys.argv is not ours: the path travels with the item
    with open(log, "a") as f:
        f.write(word + "\\n")
    return {"word": word.upper(), "len": len(word)}

@durable.workflow(store=sys.argv[2])
def fan(items):
    with Client(sys.argv[3]) as client:
        return durable.loop_over(shout, items, executor=client)

if __name__ == "__main__":
    print(json.dumps(fan([(sys.argv[1], w) for w in ["ab", "cde", "f"]])))
"""


def test_a_step_defined_in_main_runs_on_dask_workers(tmp_path: Path, cluster: Any) -> None:
    # The workers were started before this script existed: the step reaches
    # them pickled by value, not by importing __main__.
    script = tmp_path / "job.py"
    script.write_text(MAIN_SCRIPT)
    log = tmp_path / "log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(script), str(log), str(tmp_path / "store"), cluster.scheduler_address]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        '[{"word": "AB", "len": 2}, {"word": "CDE", "len": 3}, {"word": "F", "len": 1}]'
    )
    assert sorted(log.read_text().split()) == ["ab", "cde", "f"]


S3_SCRIPT = """
import json, sys
import durable
from distributed import Client
from tests.fanout_work import picky

STORE, SCHEDULER, LOG = sys.argv[1:4]

@durable.workflow(name="fan_s3", store=STORE, run_id="shared")
def fan(items):
    with Client(SCHEDULER) as client:
        return durable.loop_over(picky, items, executor=client, checkpoint_items=True)

if __name__ == "__main__":
    print(json.dumps(fan([(LOG, i) for i in range(12)])))
"""


@pytest.fixture
def s3_base(request: pytest.FixtureRequest) -> str:
    try:
        return str(request.getfixturevalue("s3_url"))
    except pytest.FixtureLookupError:
        pytest.skip("needs the s3_url fixture (moto server) from tests/conftest.py")


def test_a_dask_block_on_s3_resumes_in_another_process(
    tmp_path: Path, cluster: Any, s3_base: str
) -> None:
    # The store is on S3 and the workers only compute: the process that
    # resumes shares nothing with the first one but the bucket and the cluster.
    log = str(tmp_path / "log")
    Path(log + ".fail").write_text("7")
    url = f"{s3_base}/store"
    script = tmp_path / "fan_s3.py"
    script.write_text(S3_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_PROGRESS": "0"}
    cmd = [sys.executable, str(script), url, cluster.scheduler_address, log]

    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 1 and "item 7 refused" in first.stderr, first.stderr
    store = durable.open_store(url)
    kept = item_indexes(store, "fan_s3", "shared")
    done_first = logged(log)
    assert kept == set(done_first) and 7 not in kept and kept

    Path(log + ".fail").unlink()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == [expected(i) for i in range(12)]
    assert sorted(logged(log)[len(done_first) :]) == sorted(set(range(12)) - kept)
    assert item_indexes(durable.open_store(url), "fan_s3", "shared") == set()
