"""The drain API: `request_stop()` from another thread or from a signal
handler lets the step in flight finish and be recorded, the run ends
`interrupted`, and a resume runs each remaining step exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable

from .clikit import PIPELINE_RESULT, child_env, counts, read_until, show_json, write_flow


@pytest.fixture(autouse=True)
def _no_stop_left() -> Iterator[None]:
    durable.clear_stop()
    yield
    durable.clear_stop()


def _pipeline(store: durable.Store, ran: Counter[str], entered: threading.Event,
              go: threading.Event) -> durable.Workflow[[int], int]:  # fmt: skip
    @durable.step
    def one(n: int) -> int:
        ran["one"] += 1
        return n + 1

    @durable.step
    def two(n: int) -> int:
        ran["two"] += 1
        entered.set()  # the controller may ask for the stop now
        assert go.wait(60)
        ran["saw_request"] += durable.stop_requested()
        return n * 2

    @durable.step
    def three(n: int) -> int:
        ran["three"] += 1
        return n + 10

    @durable.workflow(store=store, run_id="d1")
    def flow(n: int) -> int:
        return three(two(one(n)))

    return flow


def test_a_stop_requested_from_another_thread_drains_the_run(local_store: durable.Store) -> None:
    ran: Counter[str] = Counter()
    entered, go = threading.Event(), threading.Event()
    flow = _pipeline(local_store, ran, entered, go)

    def controller() -> None:
        assert entered.wait(60)
        durable.request_stop()
        go.set()

    worker = threading.Thread(target=controller)
    worker.start()
    with pytest.raises(durable.Stopped) as stopped:
        flow(1)
    worker.join()
    assert stopped.value.signum is None and stopped.value.code == 130
    # the step in flight finished and was recorded; the next one never started
    assert ran == Counter(one=1, two=1, saw_request=1)
    (info,) = flow.runs()
    assert (info.status, info.steps) == ("interrupted", 2)
    assert durable.stop_requested()  # stays until cleared: no new work starts
    with pytest.warns(RuntimeWarning, match="still stands"), pytest.raises(durable.Stopped):
        flow.resume("d1")
    assert ran["three"] == 0

    durable.clear_stop()
    go.set()
    done = flow.resume("d1")
    assert (done.value, done.steps_replayed, done.steps_executed) == ((1 + 1) * 2 + 10, 2, 1)
    assert ran == Counter(one=1, two=1, three=1, saw_request=1)


def test_an_async_run_drains_too(local_store: durable.Store) -> None:
    import asyncio

    ran: Counter[str] = Counter()

    @durable.step
    async def first() -> int:
        ran["first"] += 1
        durable.request_stop()  # e.g. a controller task on the same loop
        return 1

    @durable.step
    async def second(x: int) -> int:
        ran["second"] += 1
        return x + 1

    @durable.workflow(store=local_store, run_id="a1")
    async def flow() -> int:
        return await second(await first())

    with pytest.raises(durable.Stopped):
        asyncio.run(flow())
    assert ran == Counter(first=1)
    durable.clear_stop()
    assert asyncio.run(flow.resume("a1")).value == 2
    assert ran == Counter(first=1, second=1)



@pytest.mark.parametrize("together", ["gather", "TaskGroup"])
def test_an_async_stop_lets_the_gathered_steps_in_flight_finish(
    local_store: durable.Store, together: str
) -> None:
    # A stop raised in one task of a gather is a SystemExit: asyncio lets it
    # out of the event loop at once, and asyncio.run then cancelled the other
    # steps mid-body; they were not recorded and the resume ran them again
    # (part1 and part2 twice), although their bodies had run.
    import asyncio

    ran: Counter[str] = Counter()
    gates: list[asyncio.Event] = []

    @durable.step
    async def part(i: int) -> int:
        ran[f"part{i}"] += 1
        if not gates:
            gates.append(asyncio.Event())
        if i == 0:
            await asyncio.sleep(0)  # the others enter their bodies meanwhile
            durable.request_stop()  # as SIGTERM under stop_on_signals() would
            gates[0].set()
        else:
            await gates[0].wait()  # in flight when the stop is asked for
        return i * 10

    @durable.step
    async def total(xs: list[int]) -> int:
        ran["total"] += 1
        return sum(xs)

    @durable.workflow(store=local_store, run_id="g1")
    async def flow() -> int:
        if together == "gather":
            return await total(list(await asyncio.gather(part(0), part(1), part(2))))
        async with asyncio.TaskGroup() as group:  # 3.11+
            tasks = [group.create_task(part(i)) for i in range(3)]
        return await total([t.result() for t in tasks])

    if together == "TaskGroup" and not hasattr(asyncio, "TaskGroup"):
        pytest.skip("asyncio.TaskGroup is 3.11+")
    with pytest.raises(durable.Stopped):  # not an exception group (TaskGroup)
        asyncio.run(flow())
    assert ran == Counter(part0=1, part1=1, part2=1)
    durable.clear_stop()
    assert asyncio.run(flow.resume("g1")).value == 30
    assert ran == Counter(part0=1, part1=1, part2=1, total=1)




def test_a_stop_that_a_gather_returns_as_a_value_still_stops_the_run(
    local_store: durable.Store,
) -> None:
    # The stop reaches the body as an exception of one task: with
    # return_exceptions=True it is one of the values, and the run must not
    # complete with it.
    import asyncio

    ran: Counter[int] = Counter()

    @durable.step
    async def part(i: int) -> int:
        ran[i] += 1
        if i == 0:
            durable.request_stop()
        return i

    @durable.workflow(store=local_store, run_id="rx")
    async def flow() -> list[object]:
        return list(await asyncio.gather(part(0), part(1), return_exceptions=True))

    with pytest.raises(durable.Stopped):
        asyncio.run(flow())
    durable.clear_stop()
    assert asyncio.run(flow.resume("rx")).value == [0, 1]
    assert ran == Counter({0: 1, 1: 1})


def test_a_stop_keeps_the_items_in_flight_on_a_pool(local_store: durable.Store) -> None:
    # A checkpointed loop_over on a thread pool: the stop came out of the
    # first item recorded after it, and the items running beside it, which
    # finished, were dropped unrecorded; the resume ran them again.
    from concurrent.futures import ThreadPoolExecutor

    ran: Counter[int] = Counter()
    lock = threading.Lock()
    together, asked, resumed = threading.Barrier(4), threading.Event(), threading.Event()

    @durable.step
    def item(i: int) -> int:
        with lock:
            ran[i] += 1
        if i < 4 and not resumed.is_set():
            together.wait(60)  # items 0-3 are all in flight
            if i == 0:
                durable.request_stop()
                asked.set()
            assert asked.wait(60)
        return i * 10

    @durable.workflow(store=local_store, run_id="p1")
    def flow() -> list[int]:
        with ThreadPoolExecutor(4) as pool:
            return durable.loop_over(item, range(8), executor=pool, checkpoint_items=True)

    with pytest.raises(durable.Stopped):
        flow()
    assert all(ran[i] == 1 for i in range(4))
    durable.clear_stop()
    resumed.set()
    assert flow.resume("p1").value == [i * 10 for i in range(8)]
    assert ran == Counter({i: 1 for i in range(8)})


OWN_HANDLER = """
import os, signal, sys
import durable
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow import pipeline

if sys.argv[1:] == ["resume"]:
    print(pipeline.resume("own").value)
else:
    signal.signal(signal.SIGUSR1, lambda signum, frame: durable.request_stop())
    pipeline.with_options(run_id="own")(1)
    print("not reached")
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs SIGUSR1")
def test_request_stop_from_a_signal_handler(tmp_path: Path) -> None:
    write_flow(tmp_path)
    write_flow(tmp_path, OWN_HANDLER, name="script.py")
    child = subprocess.Popen(
        [sys.executable, "script.py"], cwd=tmp_path, env=child_env(tmp_path, FLOW_BLOCK_AT="2"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        read_until(child.stdout, "step 2 started")
        child.send_signal(signal.SIGUSR1)
        # the handler runs between bytecodes of the blocked read; the step
        # then gets its line and finishes
        child.stdin.write(b"go\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        assert child.wait(timeout=60) == 130
    finally:
        child.kill()
        child.wait()
    doc = show_json(tmp_path, "own")
    assert doc["status"] == "interrupted" and doc["completedSteps"] == 2
    assert counts(tmp_path) == {"s1": 1, "s2": 1}
    done = subprocess.run(
        [sys.executable, "script.py", "resume"], cwd=tmp_path, env=child_env(tmp_path),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert counts(tmp_path) == {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1}


def test_a_stop_ends_a_wait_for_another_holders_lease(local_store: durable.Store) -> None:
    # Before: a stop requested while with_options(wait=) waited for another
    # holder left the wait going to its end (a process told to stop hung
    # on, nothing in flight), then raised RunLockedError.
    ran: list[int] = []

    @durable.step
    def work(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=local_store, run_id="held")
    def job(x: int) -> int:
        return work(x)

    lease = local_store.acquire(job.name, "held", 30.0)  # another process holds it
    try:
        durable.request_stop()
        with pytest.raises(durable.Stopped):
            job.with_options(wait=2.0)(1)
    finally:
        lease.release()
    assert ran == []


STOPPED_BLOCK = """
import durable


@durable.step
def item(i: int) -> int:
    if i == 2:
        durable.request_stop()  # a Ctrl-C while item 2 runs
    return i * 10


@durable.workflow(run_id="b1")
def flow() -> list[int]:
    return durable.loop_over(item, range(5), checkpoint_items=True)
"""


def test_durable_run_stopped_in_a_block_names_the_items_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "interrupted by request_stop() with 0 steps recorded" alone:
    # the three items kept, which the resume does not run again, read as lost.
    from durable._cli.main import main

    name = f"stopped_block_{os.getpid()}"
    write_flow(tmp_path, STOPPED_BLOCK, f"{name}.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))  # `run` adds the working folder
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["run", f"{name}:flow", "--store", str(tmp_path / "s")]) == 130
    finally:
        sys.modules.pop(name, None)
    said = capsys.readouterr().err
    assert (
        "run b1 interrupted by request_stop() with 0 steps recorded and 3 items checkpointed"
        " in loop_over(item) (a resume does not run them again)"
    ) in said
