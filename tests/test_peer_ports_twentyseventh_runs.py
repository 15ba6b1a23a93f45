"""The twenty-seventh round of the peers' own test cases (see
tests/test_peer_ports_twentyseventh.py), on runs of one id or of many at
once: DBOS's tests/test_singleexec_async.py (`test_simple_workflow`: one
workflow id started twice at once, in one event loop),
tests/test_concurrency.py (`test_concurrent_workflows`: ten ids from ten
threads) and tests/test_workflow_management.py (`test_bulk_cancel`,
`test_fork_replacement_children`). In-process; executions are counted by
the step bodies."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import durable


def _store(tmp_path: Path) -> durable.Store:
    return durable.open_store(str(tmp_path))


def test_dbos_singleexec_async_one_id_started_twice_at_once(tmp_path: Path) -> None:
    """test_simple_workflow (test_singleexec_async.py): two calls of one id
    at once run its body and step once, never side by side (max 1). The
    second call is refused (`RunLockedError`, naming the holder) or, asked
    to wait, waits without blocking the loop and answers from the record."""
    counts = Counter[str]()

    @durable.step
    async def conc_step() -> None:
        counts["step"] += 1
        counts["now"] += 1
        counts["max"] = max(counts["max"], counts["now"])
        await asyncio.sleep(0.05)  # the other call gets its turn in between
        counts["now"] -= 1

    @durable.workflow(store=_store(tmp_path))
    async def conc_workflow() -> str:
        counts["body"] += 1
        await conc_step()
        return "done"

    async def main() -> None:
        refused = conc_workflow.with_options(run_id="a")
        first, second = await asyncio.gather(refused(), refused(), return_exceptions=True)
        assert first == "done" and isinstance(second, durable.RunLockedError)
        waiting = conc_workflow.with_options(run_id="b", wait=30)
        assert list(await asyncio.gather(waiting(), waiting())) == ["done", "done"]

    asyncio.run(main())
    assert (counts["body"], counts["step"], counts["max"]) == (2, 2, 1)


def test_dbos_concurrent_workflows_from_threads(tmp_path: Path) -> None:
    """test_concurrent_workflows: ten runs of ten ids from ten threads at
    once, each returning its own id (the current run lives in a context
    variable); each called again answers from its record."""
    counts = Counter[str]()
    lock = threading.Lock()
    barrier = threading.Barrier(10)

    @durable.step
    def own_id(run_id: str) -> str:
        with lock:
            counts[run_id] += 1
        return run_id

    @durable.workflow(store=_store(tmp_path))
    def test_workflow() -> str:
        run = durable.current_run()
        assert run is not None
        return own_id(run.run_id)

    def test_thread(run_id: str) -> str:
        barrier.wait(timeout=30)
        return test_workflow.with_options(run_id=run_id)()

    ids = [f"t{i}" for i in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        assert list(pool.map(test_thread, ids)) == ids
    assert [test_workflow.with_options(run_id=i)() for i in ids] == ids
    assert counts == {i: 1 for i in ids}


def test_dbos_bulk_cancel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_bulk_cancel: three runs, each past its first step and waiting,
    cancelled together; each stops before its second step (3 executions
    in all), lists `cancelled` and answers a later call with `Cancelled`."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    counts = Counter[str]()
    ids = ["c0", "c1", "c2"]

    @durable.step
    async def step_one() -> None:
        counts["one"] += 1

    @durable.step
    async def step_two() -> None:
        counts["two"] += 1

    async def main() -> None:
        gate = asyncio.Event()
        started = {i: asyncio.Event() for i in ids}

        @durable.workflow(store=_store(tmp_path))
        async def blocking_workflow() -> str:
            run = durable.current_run()
            assert run is not None
            await step_one()
            started[run.run_id].set()
            await gate.wait()
            await step_two()
            return run.run_id

        tasks = [asyncio.ensure_future(blocking_workflow.with_options(run_id=i)()) for i in ids]
        for i in ids:
            await started[i].wait()
        assert counts == {"one": 3}
        assert {blocking_workflow.cancel(i).status for i in ids} == {"cancelling"}
        gate.set()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            assert isinstance(outcome, durable.Cancelled)
        assert {(i.run_id, i.status) for i in blocking_workflow.runs()} == {(i, "cancelled") for i in ids}
        with pytest.raises(durable.Cancelled):
            await blocking_workflow.with_options(run_id="c1")()

    asyncio.run(main())
    assert counts == {"one": 3}


def test_dbos_fork_replacement_children_has_no_counterpart(tmp_path: Path) -> None:
    """test_fork_replacement_children: DBOS forks three children under a
    changed multiplier and forks the parent with them in place of the old
    ones (1020). durable has no `replacement_children`: the changed code
    makes the parent's call a changed call, refused with nothing run;
    under `on_change="rerun"` every child reaching the changed step runs
    it again (1500), none serves its old output."""
    counts = Counter[str]()
    store = _store(tmp_path)
    multiplier = 2

    @durable.step
    def child_step(x: int) -> int:
        counts[f"child{x}"] += 1
        return x * multiplier

    @durable.workflow(store=store)
    def child_wf(x: int) -> int:
        return child_step(x)

    @durable.step
    def combine(results: list[int]) -> int:
        counts["combine"] += 1
        return sum(results)

    @durable.workflow(store=store, run_id="p")
    def parent_wf() -> int:
        return combine([child_wf(x) for x in (10, 20, 30, 40, 50)])

    assert parent_wf() == 300
    multiplier = 10
    with pytest.raises(durable.DefinitionChangedError, match="child_step"):
        parent_wf()
    assert counts["combine"] == 1
    rerun = parent_wf.with_options(on_change="rerun").run()
    assert (rerun.value, rerun.steps_replayed, rerun.steps_executed) == (1500, 0, 6)
    assert counts == {**{f"child{x}": 2 for x in (10, 20, 30, 40, 50)}, "combine": 2}
    assert len(child_wf.runs()) == 5
