"""The twenty-seventh round of the peers' own test cases (see
tests/test_peer_ports_twentyseventh.py), on steps that fail and on what
a run's listing and history say: DBOS's tests/test_dbos.py
(`test_errors_wf_async`), tests/test_failures.py
(`test_step_retries_no_final_sleep_async`, `test_run_step_should_retry`)
and tests/test_workflow_introspection.py (`test_list_workflow_error`,
`test_list_steps_errors_async`, `test_list_2steps_sleep`,
`test_list_workflow_steps_load_output`, `test_call_as_step_within_step`,
`test_callchild_rerun_asyncio`, `test_list_workflows_by_parent`).
In-process; executions are counted by the step bodies."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.testing import fake_clock


def _store(tmp_path: Path) -> durable.Store:
    return durable.open_store(str(tmp_path))


def test_dbos_errors_wf_async_retries_each_step_its_own_budget(tmp_path: Path) -> None:
    """test_errors_wf_async: two steps of 2 attempts (one sync, one async)
    and one without retries, each always raising, caught by the body: 2 + 2
    + 1 executions, a delay between tries (0.1, backoff 1) and none after
    the last. Completed, the run called again runs nothing (DBOS records
    the caught errors; durable records the body's value)."""
    counts = Counter[str]()

    @durable.step(retries=1, retry_delay=0.1, backoff=1)
    def sync_error() -> None:
        counts["sync"] += 1
        raise Exception("sync")

    @durable.step(retries=1, retry_delay=0.1, backoff=1)
    async def async_error() -> None:
        counts["async"] += 1
        raise Exception("async")

    @durable.step(retries=0)
    async def no_retry() -> None:
        counts["once"] += 1
        raise Exception("once")

    @durable.workflow(store=_store(tmp_path), run_id="e")
    async def errors_wf() -> list[str]:
        caught = []
        for call in (async_error, no_retry):
            try:
                await call()
            except Exception as e:
                caught.append(str(e))
        return caught

    @durable.workflow(store=_store(tmp_path), run_id="s")
    def sync_wf() -> str:
        try:
            sync_error()
        except Exception as e:
            return str(e)
        return "no error"

    with fake_clock() as clock:
        assert sync_wf() == "sync" and sync_wf() == "sync"
        assert asyncio.run(errors_wf()) == ["async", "once"]
        assert asyncio.run(errors_wf()) == ["async", "once"]
    assert counts == {"sync": 2, "async": 2, "once": 1}
    assert clock.slept == [0.1, 0.1]


def test_dbos_step_retries_no_final_sleep_async(tmp_path: Path) -> None:
    """test_step_retries_no_final_sleep_async: 3 attempts, 1 s then 2 s
    between them, and no wasted sleep after the last: the step's own error
    ends the run, which lists failed, its step with 3 failed tries."""
    counts = Counter[str]()

    @durable.step(retries=2, retry_delay=1.0, backoff=2.0)
    async def failing_step_async() -> None:
        counts["step"] += 1
        raise Exception("fail")

    @durable.workflow(store=_store(tmp_path), run_id="f")
    async def failing_workflow_async() -> None:
        await failing_step_async()

    with fake_clock() as clock, pytest.raises(Exception, match="fail"):
        asyncio.run(failing_workflow_async())
    assert counts == {"step": 3} and clock.slept == [1.0, 2.0]
    (step,) = [s for s in failing_workflow_async.history("f") if s.kind == "step"]
    assert (step.status, step.attempts, len(step.failures)) == ("failed", 3, 3)
    assert [f.message for f in step.failures] == ["fail"] * 3


class FatalError(Exception):
    pass


def test_dbos_run_step_should_retry_narrowed_by_retry_on(tmp_path: Path) -> None:
    """test_run_step_should_retry: a step whose `should_retry` refuses its
    error runs once for all its `max_attempts` (durable: `retry_on=`
    names what is retried); a retryable error is tried again."""
    counts = Counter[str]()

    @durable.step(retries=2, retry_delay=0, retry_on=(ConnectionError,))
    def fatal_step() -> None:
        counts["sync"] += 1
        raise FatalError("no retry sync")

    @durable.step(retries=2, retry_delay=0, retry_on=(ConnectionError,))
    async def fatal_step_async() -> None:
        counts["async"] += 1
        raise FatalError("no retry async")

    @durable.step(retries=2, retry_delay=0, retry_on=(ConnectionError,))
    async def flaky() -> str:
        counts["flaky"] += 1
        if counts["flaky"] < 3:
            raise ConnectionError("busy")
        return "ok"

    @durable.workflow(store=_store(tmp_path), run_id="r")
    async def run_step_wf() -> str:
        with pytest.raises(FatalError, match="no retry sync"):
            fatal_step()  # a sync step in an async body: recorded the same
        with pytest.raises(FatalError, match="no retry async"):
            await fatal_step_async()
        return await flaky()

    assert asyncio.run(run_step_wf()) == "ok"
    assert asyncio.run(run_step_wf()) == "ok"
    assert counts == {"sync": 1, "async": 1, "flaky": 3}


def test_dbos_list_workflow_error(tmp_path: Path) -> None:
    """test_list_workflow_error: a workflow that raises lists `failed` (DBOS's
    ERROR), with its error, times and arguments; filtered by status it is
    found under `failed` and not under `running` or `suspended`."""

    @durable.workflow(store=_store(tmp_path), run_id="x")
    def simple_workflow(x: int) -> int:
        raise Exception(f"Test error: {x}")

    with pytest.raises(Exception, match=r"^Test error: 1$"):
        simple_workflow(1)
    (info,) = simple_workflow.runs()
    assert (info.run_id, info.status, info.error) == ("x", "failed", "Exception: Test error: 1")
    assert info.workflow == simple_workflow.name and info.parent is None
    assert 0 < info.created <= info.updated and info.arguments == {"x": 1}
    assert simple_workflow.runs(status=("running", "suspended")) == []
    assert [i.run_id for i in simple_workflow.runs(status=("failed", "running"))] == ["x"]


def test_dbos_list_steps_errors_async(tmp_path: Path) -> None:
    """test_list_steps_errors_async: a failing step called directly is one
    position of the history, failed, without output, with its error; a
    resume runs it again (a failure is never a finished step)."""
    counts = Counter[str]()

    @durable.step
    async def failing_step() -> None:
        counts["step"] += 1
        raise Exception("fail")

    @durable.workflow(store=_store(tmp_path), run_id="c")
    async def call_step() -> None:
        return await failing_step()

    for _ in range(2):
        with pytest.raises(Exception, match="fail"):
            asyncio.run(call_step())
    steps = [s for s in call_step.history("c") if s.position != -1]
    assert [(s.position, s.name.rsplit(".", 1)[-1], s.status) for s in steps] == [(0, "failing_step", "failed")]
    assert steps[0].error is not None and "fail" in steps[0].error and steps[0].value is None
    assert counts == {"step": 2}


def test_dbos_list_2steps_sleep_and_load_output(tmp_path: Path) -> None:
    """test_list_2steps_sleep and test_list_workflow_steps_load_output: two
    steps then a durable sleep are three positions in order, the sleep's
    kind `sleep`; a step's output is read on demand (`.value`,
    `durable.load`), the preview without it."""
    counts = Counter[str]()

    @durable.step
    def step_one() -> str:
        counts["one"] += 1
        return "a"

    @durable.step
    def step_two() -> None:
        counts["two"] += 1

    @durable.workflow(store=_store(tmp_path), run_id="w")
    def simple_workflow() -> None:
        step_one()
        step_two()
        durable.sleep(1)

    with fake_clock() as clock:
        simple_workflow()
        simple_workflow()
    steps = [s for s in simple_workflow.history("w") if s.position != -1]
    assert [(s.position, s.kind, s.name.rsplit(".", 1)[-1]) for s in steps][:2] == [
        (0, "step", "step_one"),
        (1, "step", "step_two"),
    ]
    assert (steps[2].position, steps[2].kind) == (2, "sleep") and len(steps) == 3
    assert (steps[0].value, steps[0].error) == ("a", None) and steps[0].preview == "'a'"
    assert durable.load(simple_workflow, "w", 0, store=_store(tmp_path)) == "a"
    assert clock.slept == [1] and counts == {"one": 1, "two": 1}


def test_dbos_call_as_step_within_step(tmp_path: Path) -> None:
    """test_call_as_step_within_step: what a step calls inside itself runs
    directly, without a record of its own: the run's history has the outer
    step only, and the run's status read inside it is `running`."""
    counts = Counter[str]()

    @durable.step
    def inner(run_id: str) -> str:
        counts["inner"] += 1
        (info,) = [i for i in status_workflow.runs() if i.run_id == run_id]
        return info.status

    @durable.step
    def get_status(run_id: str) -> str:
        counts["outer"] += 1
        return inner(run_id)

    @durable.workflow(store=_store(tmp_path), run_id="s")
    def status_workflow() -> str:
        run = durable.current_run()
        assert run is not None
        return get_status(run.run_id)

    assert status_workflow() == "running"
    assert status_workflow() == "running"
    steps = [s for s in status_workflow.history("s") if s.position != -1]
    assert [s.name.rsplit(".", 1)[-1] for s in steps] == ["get_status"]
    assert counts == {"inner": 1, "outer": 1}


def test_dbos_callchild_rerun_with_the_id_the_parent_gives(tmp_path: Path) -> None:
    """test_callchild_rerun_asyncio and test_list_workflows_by_parent: a
    child started under an id the parent chooses, and two under ids derived
    from the parent's; the parent called again returns the same value and
    no child runs again; each child lists the parent as its caller."""
    counts = Counter[str]()
    store = _store(tmp_path)

    @durable.workflow(store=store)
    async def child_workflow(name: str) -> str:
        counts[name] += 1
        return f"child_{name}"

    @durable.workflow(store=store, run_id="p")
    async def parent_workflow() -> list[str]:
        chosen = await child_workflow.with_options(run_id="kid-1")("chosen")
        return [chosen, *await asyncio.gather(child_workflow("a"), child_workflow("b"))]

    assert asyncio.run(parent_workflow()) == ["child_chosen", "child_a", "child_b"]
    assert asyncio.run(parent_workflow()) == ["child_chosen", "child_a", "child_b"]
    kids = {k.run_id: k for k in child_workflow.runs()}
    assert "kid-1" in kids and len(kids) == 3
    assert {k.parent.split("@")[0] for k in kids.values() if k.parent} == {f"{parent_workflow.name}/p"}
    assert [k for k in kids.values() if k.parent is None] == []
    assert [i.parent for i in parent_workflow.runs()] == [None]
    assert counts == {"chosen": 1, "a": 1, "b": 1}
