"""Async fan-out: steps awaited together with asyncio.gather take their
positions in call order, so a resumed run hands each recorded result back to
the call that made it; async loop_over runs items concurrently, bounded."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.fanout_work import item_indexes, logged, note, records

ROOT = Path(__file__).resolve().parents[1]

GATHER_SCRIPT = """
import asyncio, json, os, sys
import durable

LOG, STORE = sys.argv[1], sys.argv[2]
N = 20

@durable.step
async def piece(i, word):
    # Step i yields to the loop N - i times: the steps finish in reverse call
    # order (19 first), deterministically, without any clock.
    for _ in range(N - i):
        await asyncio.sleep(0)
    # Read at call time: a module constant would count in the fingerprint.
    if os.environ.get("GATHER_CRASH") == "1" and i == 9:
        os._exit(3)  # a real crash: 19..10 are recorded, 0..9 are not
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{i}\\n".encode())
    os.close(fd)
    return f"{word}:{i}:{i * i}"

@durable.workflow(store=STORE, run_id="gather")
async def together(word):
    return await asyncio.gather(*(piece(i, word) for i in range(N)))

print(json.dumps(asyncio.run(together("kiwi"))))
"""


def test_gather_resumes_each_call_with_its_own_record(tmp_path: Path) -> None:
    script = tmp_path / "gather.py"
    script.write_text(GATHER_SCRIPT)
    log = tmp_path / "log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(crash: bool) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, str(script), str(log), str(tmp_path / "store")]
        child = {**env, "GATHER_CRASH": "1" if crash else "0"}
        return subprocess.run(cmd, env=child, capture_output=True, text=True, timeout=60)

    first = run(crash=True)
    assert first.returncode == 3, first.stderr
    assert logged(log) == list(range(19, 9, -1))  # finished in reverse order
    store = durable.open_store(str(tmp_path / "store"))
    steps = records(store, "gather.together", "gather", "steps")
    # Positions are call order: the ten recorded steps sit at positions 10..19.
    assert steps == [f"steps/{p:08d}" for p in range(10, 20)]

    second = run(crash=False)
    assert second.returncode == 0, second.stderr
    assert sorted(logged(log)[10:]) == list(range(10))  # only the unrecorded ones ran
    assert json.loads(second.stdout) == [f"kiwi:{i}:{i * i}" for i in range(20)]


@durable.step
async def tagged(label: str) -> str:
    await asyncio.sleep(0)  # let other tasks run
    note(os.environ["GATHER_LOG"], label)
    return f"<{label}>"


def test_a_task_created_before_other_steps_keeps_its_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATHER_LOG", str(tmp_path / "log"))
    stop = {"on": True}

    @durable.workflow(store=str(tmp_path / "store"), run_id="t")
    async def flow() -> list[str]:
        task = asyncio.create_task(tagged("1"))  # called first, runs later
        x = await tagged("2")
        y = await tagged("3")
        z = await task
        if stop["on"]:
            raise RuntimeError("stop after the steps")
        return [x, y, z]

    with pytest.raises(RuntimeError, match="stop after"):
        asyncio.run(flow())
    stop["on"] = False
    run = asyncio.run(flow.run())
    # On the resume the replayed steps return at once; positions taken when
    # the task first ran would now be handed to the wrong calls.
    assert run.value == ["<2>", "<3>", "<1>"]
    assert run.steps_replayed == 3 and run.steps_executed == 0
    assert sorted((tmp_path / "log").read_text().split()) == ["1", "2", "3"]


def test_async_steps_stay_coroutine_functions() -> None:
    assert inspect.iscoroutinefunction(tagged)
    assert asyncio.iscoroutinefunction(tagged)
    assert str(inspect.signature(tagged)) == "(label: 'str') -> 'str'"

    class Holder:
        @durable.step
        async def method(self, x: int) -> int:
            return x + 1

    assert inspect.iscoroutinefunction(Holder().method)
    assert asyncio.run(Holder().method(1)) == 2


active = {"now": 0, "peak": 0}


async def crowd(item: tuple[str, int]) -> str:
    path, i = item
    active["now"] += 1
    active["peak"] = max(active["peak"], active["now"])
    for _ in range(3):
        await asyncio.sleep(0)
    active["now"] -= 1
    note(path, str(i))
    if Path(path + ".fail").exists() and i == 11:
        raise LookupError("item 11 is missing")
    return f"c{i}"


@pytest.mark.parametrize("limit", [None, 4])
def test_async_loop_over_runs_items_concurrently_and_bounded(
    tmp_path: Path, limit: int | None
) -> None:
    log = str(tmp_path / "log")
    active.update(now=0, peak=0)

    @durable.workflow(store=str(tmp_path / "store"))
    async def fan(n: int) -> list[str]:
        return await durable.loop_over(crowd, [(log, i) for i in range(n)], max_concurrency=limit)

    assert asyncio.run(fan(40)) == [f"c{i}" for i in range(40)]
    assert active["peak"] == (limit or 16)
    assert sorted(logged(log)) == list(range(40))
    assert asyncio.run(fan(40)) == [f"c{i}" for i in range(40)]
    assert len(logged(log)) == 40  # replayed


def test_async_loop_over_keeps_finished_items_on_failure(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    Path(log + ".fail").touch()
    store = durable.open_store(str(tmp_path / "store"))

    @durable.workflow(store=store, run_id="a")
    async def fan(n: int) -> list[str]:
        items = [(log, i) for i in range(n)]
        return await durable.loop_over(crowd, items, checkpoint_items=True, max_concurrency=4)

    with pytest.raises(LookupError) as caught:
        asyncio.run(fan(20))
    notes = "".join(getattr(caught.value, "__notes__", [])) + str(caught.value)
    assert "item 11 (of 20)" in notes
    kept = item_indexes(store, fan.name, "a")
    first = logged(log)
    # The workers already running when 11 failed finished, and were kept.
    assert kept == set(first) - {11} and len(kept) >= 11
    Path(log + ".fail").unlink()
    assert asyncio.run(fan(20)) == [f"c{i}" for i in range(20)]
    assert sorted(logged(log)[len(first) :]) == sorted(set(range(20)) - kept)


def test_async_loop_over_outside_a_workflow(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    out = asyncio.run(durable.loop_over(crowd, [(log, i) for i in range(5)]))  # type: ignore[arg-type]
    assert out == [f"c{i}" for i in range(5)]


def test_a_step_that_outlives_its_run_records_nothing(store: durable.Store) -> None:
    """A step still running when its run ended must not write into the run,
    which a new call may be executing (a notebook re-run at once): its record
    landed at the new call's position and that call returned it. The run
    waits for the tasks its body created (tests/test_async_settle.py), so
    the step runs here in a task durable did not see being created."""
    ran: list[int] = []

    async def main() -> None:
        release = {1: asyncio.Event(), 5: asyncio.Event()}
        running = {1: asyncio.Event(), 5: asyncio.Event()}
        late: list[asyncio.Task[int]] = []

        @durable.step
        async def slow(n: int) -> int:
            ran.append(n)
            running[n].set()
            await release[n].wait()
            return n * 10

        @durable.step
        async def check(n: int) -> int:
            return n

        @durable.workflow(store=store, run_id="o1", on_change="rerun")
        async def flow(n: int) -> list[int]:
            first = slow(n)  # takes position 0 now
            if n == 1:
                late.append(asyncio.Task(first))  # bypasses the loop's task factory
                await running[1].wait()
                raise ValueError("no")
            return [await first, await check(n + 1)]

        with pytest.raises(ValueError):
            await flow(1)
        again = asyncio.ensure_future(flow(5))
        await running[5].wait()  # slow(5) runs at position 0, slow(1) still too
        release[1].set()
        (orphan,) = late
        await asyncio.wait(late)
        release[5].set()
        assert await again == [50, 6]  # not slow(1)'s 10
        assert durable.load(flow, "o1", 0, store=store) == 50
        assert isinstance(orphan.exception(), durable.ConfigurationError)
        assert "after its workflow body had returned" in str(orphan.exception())

    asyncio.run(main())
    assert ran == [1, 5]
