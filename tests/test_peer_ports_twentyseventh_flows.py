"""The twenty-seventh round of the peers' own test cases (see
tests/test_peer_ports_twentyseventh.py): Prefect's flow retries
(tests/test_flows.py `TestFlowRetries`) and task retries
(tests/test_tasks.py `test_task_respects_retry_count`,
`test_task_only_uses_necessary_retries`,
`test_with_options_allows_override_of_0_retries`). A flow with
`retries=1` is a workflow called again after it failed (docs/caching.md,
"Coming from Prefect": a flow run retried is a resume): what finished is
replayed, what failed runs again, a step's retries start afresh on each
call. Executions are counted by the step bodies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.events import Event, StepExecuted, StepFailed, StepRetried
from durable.testing import fake_clock


def _store(tmp_path: Path) -> durable.Store:
    return durable.open_store(str(tmp_path))


def _retried(wf: durable.Workflow[[], str]) -> str:
    """Prefect's `@flow(retries=1)`: the run called again once it failed."""
    try:
        return wf()
    except ValueError:
        return wf()


def test_prefect_flow_retry_with_error_in_flow_and_successful_task(tmp_path: Path) -> None:
    counts = Counter[str]()

    @durable.step
    def my_task() -> str:
        counts["task"] += 1
        return "hello"

    @durable.workflow(store=_store(tmp_path), run_id="f")
    def foo() -> str:
        counts["flow"] += 1
        value = my_task()
        if counts["flow"] == 1:
            raise ValueError()
        return value

    assert _retried(foo) == "hello"
    assert counts == {"flow": 2, "task": 1}


def test_prefect_flow_retry_with_no_error_in_flow_and_one_failed_task(tmp_path: Path) -> None:
    """"Task should be reset and run again": a failed step is no record."""
    counts = Counter[str]()

    @durable.step
    def my_task() -> str:
        counts["task"] += 1
        if counts["flow"] == 1:
            raise ValueError()
        return "hello"

    @durable.workflow(store=_store(tmp_path), run_id="f")
    def foo() -> str:
        counts["flow"] += 1
        return my_task()

    assert _retried(foo) == "hello"
    assert counts == {"flow": 2, "task": 2}


def test_prefect_flow_retry_with_no_error_in_flow_and_one_failed_child_flow(tmp_path: Path) -> None:
    """"Child flow should be reset and run again": the child run failed, the
    parent called again resumes it (same child run id); the parent's
    history then holds one completed position for it."""
    counts = Counter[str]()
    store = _store(tmp_path)

    @durable.workflow(store=store)
    def child_flow() -> str:
        counts["child"] += 1
        if counts["flow"] == 1:
            raise ValueError()
        return "hello"

    @durable.workflow(store=store, run_id="p")
    def parent_flow() -> str:
        counts["flow"] += 1
        return child_flow()

    assert _retried(parent_flow) == "hello"
    assert counts == {"flow": 2, "child": 2}
    (child,) = child_flow.runs()
    assert child.status == "completed"
    positions = [s for s in parent_flow.history("p") if s.position != -1]
    assert [(s.kind, s.status, s.child) for s in positions] == [("workflow", "completed", child.run_id)]


def test_prefect_flow_retry_with_error_in_flow_and_one_failed_task_with_retries(tmp_path: Path) -> None:
    """"Task should use all of its retries every time": 2 tries in the
    first call (both fail), 2 in the second (the first fails): 4."""
    counts = Counter[str]()

    @durable.step(retries=1, retry_delay=0)
    def my_task() -> str:
        counts["task"] += 1
        counts["this call"] += 1
        if counts["flow"] == 1:
            raise ValueError("Fail on first flow run")
        if counts["this call"] == 1:
            raise ValueError("Fail on first task run")
        return "hello"

    @durable.workflow(store=_store(tmp_path), run_id="f")
    def foo() -> str:
        counts["this call"] = 0
        counts["flow"] += 1
        return my_task()

    assert _retried(foo) == "hello"
    assert (counts["flow"], counts["task"]) == (2, 4)
    (step,) = [s for s in foo.history("f") if s.kind == "step"]
    assert (step.status, step.attempts, len(step.failures)) == ("completed", 4, 3)


def test_prefect_parent_flow_retries_failed_child_flow_with_retries(tmp_path: Path) -> None:
    """test_parent_flow_retries_failed_child_flow_with_retries: durable's
    workflows have no `retries=`; the child's step has them. "Child flow
    should run 2 times for each parent run": 4."""
    counts = Counter[str]()
    store = _store(tmp_path)

    @durable.step(retries=1, retry_delay=0)
    def child_work() -> str:
        counts["child"] += 1
        counts["this call"] += 1
        if counts["flow"] == 1 or counts["this call"] == 1:
            raise ValueError()
        return "hello"

    @durable.workflow(store=store)
    def child_flow() -> str:
        return child_work()

    @durable.workflow(store=store, run_id="p")
    def parent_flow() -> str:
        counts["this call"] = 0
        counts["flow"] += 1
        return child_flow()

    assert _retried(parent_flow) == "hello"
    assert (counts["flow"], counts["child"]) == (2, 4)


@pytest.mark.parametrize("always_fail", [False, True])
def test_prefect_task_respects_retry_count(tmp_path: Path, always_fail: bool) -> None:
    """test_task_respects_retry_count: 3 retries are 4 attempts, each retry
    an event (Prefect's "Retrying" states), then "Completed" or "Failed"."""
    counts = Counter[str]()
    seen: list[str] = []

    @durable.step(retries=3, retry_delay=0)
    def flaky_function() -> bool:
        counts["task"] += 1
        if not always_fail and counts["task"] == 4:
            return True
        raise ValueError("flaky")

    @durable.workflow(store=_store(tmp_path), run_id="r")
    def test_flow() -> str:
        try:
            return f"completed: {flaky_function()}"
        except ValueError as e:
            return f"failed: {e}"

    def note(event: Event) -> None:
        if isinstance(event, (StepRetried, StepExecuted, StepFailed)):
            seen.append(type(event).__name__)

    with durable.on_event(note):
        assert test_flow() == ("failed: flaky" if always_fail else "completed: True")
    assert counts == {"task": 4}
    assert seen == ["StepRetried"] * 3 + ["StepFailed" if always_fail else "StepExecuted"]


def test_prefect_task_only_uses_necessary_retries(tmp_path: Path) -> None:
    counts = Counter[str]()

    @durable.step(retries=3, retry_delay=5)
    def flaky_function() -> bool:
        counts["task"] += 1
        if counts["task"] == 2:
            return True
        raise ValueError()

    @durable.workflow(store=_store(tmp_path), run_id="r")
    def test_flow() -> bool:
        return flaky_function()

    with fake_clock() as clock:
        assert test_flow() is True and test_flow() is True
    assert counts == {"task": 2} and clock.slept == [5]


def test_prefect_with_options_override_of_0_retries(tmp_path: Path) -> None:
    """test_with_options_allows_override_of_0_retries: durable's
    `with_options` is a workflow's; a step is made again with `retries=0`
    (`durable.step(retries=0)(fn)`), and runs once where the other tries
    four times."""
    counts = Counter[str]()

    def initial_task() -> None:
        counts["task"] += 1
        raise ValueError()

    retried = durable.step(retries=3, retry_delay=10, name="retried")(initial_task)
    once = durable.step(retries=0, retry_delay=0, name="once")(initial_task)

    @durable.workflow(store=_store(tmp_path), run_id="r")
    def flow(which: str) -> None:
        (retried if which == "retried" else once)()

    with fake_clock() as clock:
        with pytest.raises(ValueError):
            flow("once")
        assert counts == {"task": 1} and clock.slept == []
        with pytest.raises(ValueError):
            flow.with_options(run_id="r2")("retried")
    assert counts == {"task": 5} and clock.slept == [10, 20, 40]
