"""A twenty-seventh round of the peers' own test cases: DBOS's
tests/test_async_workflow_management.py (cancel, resume, fork, list runs
and their steps of `async def` workflows) and tests/test_async.py
(`test_sleep_workflow`, `test_asyncio_wait`, children gathered at once).
Where DBOS differs on purpose (a cancelled workflow resumed continues in
DBOS, runs again only by a restart here), docs/identity.md's "Coming from
DBOS Transact" says so. The rest of the round is in
tests/test_peer_ports_twentyseventh_*.py; earlier rounds in
tests/test_peer_ports*.py. Executions are counted by the step bodies."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.testing import fake_clock


def _store(tmp_path: Path) -> durable.Store:
    return durable.open_store(str(tmp_path))


def _gated(tmp_path: Path, counts: Counter[str], gate: asyncio.Event, started: asyncio.Event) -> durable.AsyncWorkflow[[int], int]:
    @durable.step
    async def step_one() -> None:
        counts["one"] += 1

    @durable.step
    async def step_two() -> None:
        counts["two"] += 1

    @durable.workflow(store=_store(tmp_path), run_id="c1")
    async def simple_workflow(x: int) -> int:
        await step_one()
        started.set()
        await gate.wait()
        await step_two()
        return x

    return simple_workflow


async def _cancel_midway(wf: durable.AsyncWorkflow[[int], int], gate: asyncio.Event, started: asyncio.Event) -> None:
    task = asyncio.ensure_future(wf(5))
    await started.wait()
    assert wf.cancel("c1").status == "cancelling"  # this process holds it: stops at the next boundary
    gate.set()
    with pytest.raises(durable.Cancelled):
        await task


def test_dbos_cancel_workflow_async(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_cancel_workflow_async: cancelled while it waits between its
    steps, the second step never runs, and the run lists `cancelled`."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    counts = Counter[str]()

    async def main() -> None:
        gate, started = asyncio.Event(), asyncio.Event()
        wf = _gated(tmp_path, counts, gate, started)
        await _cancel_midway(wf, gate, started)
        assert [(i.run_id, i.status) for i in wf.runs()] == [("c1", "cancelled")]

    asyncio.run(main())
    assert counts == {"one": 1}


def test_dbos_resume_workflow_async_is_a_restart_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_resume_workflow_async: DBOS's resume of a cancelled workflow
    runs on from its step two (step one: 1 execution). durable never
    resumes a cancelled run (a cancel is final, "Coming from DBOS
    Transact"): the resume raises `Cancelled` and runs nothing; a restart
    runs it afresh, step one included."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    counts = Counter[str]()

    async def main() -> None:
        gate, started = asyncio.Event(), asyncio.Event()
        wf = _gated(tmp_path, counts, gate, started)
        await _cancel_midway(wf, gate, started)
        with pytest.raises(durable.Cancelled):
            await wf.resume("c1")
        assert counts == {"one": 1}
        assert await wf.with_options(restart=True)(5) == 5
        assert await wf(5) == 5  # completed: answered from its record

    asyncio.run(main())
    assert counts == {"one": 2, "two": 1}


def _three(counts: Counter[str], store: durable.Store) -> durable.AsyncWorkflow[[int], int]:
    @durable.step
    async def step_one(x: int) -> int:
        counts["one"] += 1
        return x + 1

    @durable.step
    async def step_two(x: int) -> int:
        counts["two"] += 1
        return x + 2

    @durable.step
    async def step_three(x: int) -> int:
        counts["three"] += 1
        return x + 3

    @durable.workflow(store=store)
    async def simple_workflow(x: int) -> int:
        return await step_one(x) + await step_two(x) + await step_three(x)

    return simple_workflow


def test_dbos_fork_workflow_async(tmp_path: Path) -> None:
    """test_fork_workflow_async: a fork from DBOS's step 2 (1-based) is
    `fork(run, at=1)`: step one replays, steps two and three run again,
    in a new run; the source run is as it was."""
    counts = Counter[str]()
    wf = _three(counts, _store(tmp_path))

    async def main() -> None:
        assert await wf.with_options(run_id="w")(1) == 9
        assert counts == {"one": 1, "two": 1, "three": 1}
        forked = await wf.fork("w", at=1)
        assert forked.run_id != "w" and forked.value == 9
        assert (forked.steps_replayed, forked.steps_executed) == (1, 2)
        again = await wf.fork("w", at=3)  # every step recorded: nothing runs (DBOS's fork at 100)
        assert again.value == 9 and again.steps_executed == 0

    asyncio.run(main())
    assert counts == {"one": 1, "two": 2, "three": 2}


def test_dbos_list_workflows_and_their_steps_async(tmp_path: Path) -> None:
    """test_list_workflows_async and test_list_workflow_steps_async: the
    runs listed are the ones started, each completed, and a run's history
    names its steps in order, with their outputs."""
    counts = Counter[str]()
    wf = _three(counts, _store(tmp_path))

    async def main() -> None:
        for i in range(3):
            assert await wf.with_options(run_id=f"r{i}")(i) == 3 * i + 6

    asyncio.run(main())
    assert sorted((i.run_id, i.status, i.steps) for i in wf.runs()) == [
        ("r0", "completed", 3),
        ("r1", "completed", 3),
        ("r2", "completed", 3),
    ]
    steps = [s for s in wf.history("r1") if s.kind == "step"]
    assert [(s.position, s.name.rsplit(".", 1)[-1], s.value) for s in steps] == [
        (0, "step_one", 2),
        (1, "step_two", 3),
        (2, "step_three", 4),
    ]
    assert counts == {"one": 3, "two": 3, "three": 3}


def test_dbos_bulk_delete_async(tmp_path: Path) -> None:
    """test_bulk_async_workflow_management's deletes: a deleted run is gone
    from the listing, and its id called again runs afresh."""
    counts = Counter[str]()
    wf = _three(counts, _store(tmp_path))

    async def main() -> None:
        for i in range(4):
            await wf.with_options(run_id=f"d{i}")(i)
        for i in (0, 2):
            wf.delete(f"d{i}")
        assert sorted(i.run_id for i in wf.runs()) == ["d1", "d3"]
        assert await wf.with_options(run_id="d1")(1) == 9  # kept: replayed
        assert await wf.with_options(run_id="d2")(2) == 12  # deleted: runs again

    asyncio.run(main())
    assert counts == {"one": 5, "two": 5, "three": 5}


def test_dbos_sleep_workflow_async(tmp_path: Path) -> None:
    """test_sleep_workflow: a completed run called again answers from its
    record without running the body or the sleep again."""
    counts = Counter[str]()

    @durable.workflow(store=_store(tmp_path), run_id="s")
    async def sleeper(secs: float) -> str:
        counts["body"] += 1
        await durable.asleep(secs)
        run = durable.current_run()
        assert run is not None
        return run.run_id

    with fake_clock() as clock:
        assert asyncio.run(sleeper(1.5)) == "s"
        assert asyncio.run(sleeper(1.5)) == "s"
    assert clock.slept == [1.5]
    assert counts == {"body": 1}
    assert [s.kind for s in sleeper.history("s")] == ["initial", "sleep"]


def test_dbos_asyncio_wait_first_completed(tmp_path: Path) -> None:
    """test_asyncio_wait: `asyncio.wait(..., FIRST_COMPLETED)` over two
    steps, the slow one let through after; each step runs once, and a fork
    past every step (DBOS's fork at 100) replays both. The tasks' positions
    are taken when they are made, so replay order never depends on which
    finished first."""
    counts = Counter[str]()
    seen: list[tuple[list[str], int]] = []

    @durable.step
    async def fast_step(val: str) -> str:
        counts["fast"] += 1
        return val + "_done"

    @durable.step
    async def slow_step(val: str) -> str:
        counts["slow"] += 1
        return val + "_done"

    @durable.workflow(store=_store(tmp_path), run_id="w")
    async def wait_workflow() -> list[str]:
        gate = asyncio.Event()

        async def slow() -> str:
            await gate.wait()
            return await slow_step("slow")

        done, pending = await asyncio.wait(
            [asyncio.ensure_future(fast_step("fast")), asyncio.ensure_future(slow())],
            return_when=asyncio.FIRST_COMPLETED,
        )
        seen.append(([t.result() for t in done], len(pending)))
        gate.set()
        done2, _ = await asyncio.wait(pending)
        return [t.result() for t in done] + [t.result() for t in done2]

    assert asyncio.run(wait_workflow()) == ["fast_done", "slow_done"]
    forked = asyncio.run(wait_workflow.fork("w", at=2))  # a task each: positions 0 and 1
    assert forked.value == ["fast_done", "slow_done"] and forked.steps_executed == 0
    assert counts == {"fast": 1, "slow": 1}
    assert seen == [(["fast_done"], 1), (["fast_done"], 1)]


def test_dbos_children_gathered_at_once_are_listed_under_their_parent(tmp_path: Path) -> None:
    """test_async_child_id_survives_concurrent_context_clear: five child
    workflows gathered at once each get their own id, derived from the
    parent's, and list it as their parent; the parent called again answers
    from its record, no child runs again."""
    counts = Counter[int]()
    store = _store(tmp_path)

    @durable.workflow(store=store)
    async def child(x: int) -> int:
        counts[x] += 1
        return x

    @durable.workflow(store=store, run_id="p")
    async def parent(n: int) -> list[int]:
        return list(await asyncio.gather(*[child(i) for i in range(n)]))

    assert asyncio.run(parent(5)) == [0, 1, 2, 3, 4]
    assert asyncio.run(parent(5)) == [0, 1, 2, 3, 4]
    kids = child.runs()
    assert len({k.run_id for k in kids}) == 5 and all(k.run_id for k in kids)
    assert {k.parent.split("@")[0] for k in kids if k.parent} == {f"{parent.name}/p"}
    assert len([k for k in kids if k.parent]) == 5 and {k.status for k in kids} == {"completed"}
    assert counts == {i: 1 for i in range(5)}


def test_dbos_fork_past_tasks_gathered_last_replays_them(tmp_path: Path) -> None:
    """test_asyncio_wait's fork past the end (DBOS's fork at 100) over a
    body that ends gathering two coroutines of two steps each: everything
    replays, nothing runs. A task keeps no record of its own, only its
    steps' (`0.0.0`, `0.0.1`, ...), so the run's position 0 had no record
    and the fork was refused ("completed with positions 0 to -1"): it
    could only start afresh, at 0. `mutate=` there is refused: it would
    replace an output position 0 does not have."""
    counts = Counter[str]()

    @durable.step
    async def fetch(x: int) -> int:
        counts[f"fetch{x}"] += 1
        return x * 10

    @durable.step
    async def score(x: int) -> int:
        counts[f"score{x}"] += 1
        return x + 1

    async def agent(x: int) -> int:
        return await score(await fetch(x))

    @durable.workflow(store=_store(tmp_path), run_id="g")
    async def flow() -> list[int]:
        return list(await asyncio.gather(agent(1), agent(2)))

    assert asyncio.run(flow()) == [11, 21]
    forked = asyncio.run(flow.fork("g", at=1))
    assert (forked.value, forked.steps_replayed, forked.steps_executed) == ([11, 21], 4, 0)
    assert asyncio.run(flow.fork("g", at=0)).steps_executed == 4
    with pytest.raises(durable.ConfigurationError, match="between 0 and 1"):
        asyncio.run(flow.fork("g", at=2))
    # Position 0 holds no output of its own to replace: refused, never ignored.
    with pytest.raises(durable.ConfigurationError, match="has none of its own"):
        asyncio.run(flow.fork("g", at=1, mutate=lambda value: [0]))
    assert len(flow.runs()) == 3
    assert counts == {"fetch1": 2, "fetch2": 2, "score10": 2, "score20": 2}
