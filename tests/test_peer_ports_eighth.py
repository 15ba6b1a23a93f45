"""The seventh round of the peers' own test cases, continued (see
tests/test_peer_ports_seventh.py): LangGraph (libs/langgraph/tests/
test_retry.py: retry_on, a CancelledError a node raises, error handlers;
test_pregel.py: a caught task exception, mapped tasks at each durability
level), Prefect (tests/test_tasks.py: nested retries, constructor
validation), Temporal (tests/worker/test_activity.py: non-retryable
errors; test_workflow.py: local activity backoff) and PraisonAI
(tests/test_workflow_patterns.py: workflow hooks)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import durable
from durable import events
from durable.testing import FakeClock

# -- LangGraph: libs/langgraph/tests/test_retry.py, test_pregel.py ------------


def test_langgraph_user_raised_cancelled_error_never_completes(store: durable.Store) -> None:
    """test_pregel_user_raised_cancellederror_fails_run: of two branches
    gathered, one raises asyncio.CancelledError itself; the run must not
    complete with the other's partial result. durable ends it `interrupted`
    (a BaseException in a step, getting-started.md) and raises the error;
    a resume replays the branch that finished and runs the other again."""
    ran: list[str] = []

    @durable.step
    async def ok() -> str:
        ran.append("ok")
        return "ok"

    @durable.step
    async def boom() -> str:
        ran.append("boom")
        if ran.count("boom") == 1:
            raise asyncio.CancelledError("user-raised in node body")
        return "boom"

    @durable.workflow(store=store, run_id="branches")
    async def graph() -> list[str]:
        return list(await asyncio.gather(ok(), boom()))

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(graph())
    assert sorted(ran) == ["boom", "ok"] and [r.status for r in graph.runs()] == ["interrupted"]
    run = asyncio.run(graph.resume("branches"))
    assert run.value == ["ok", "boom"] and sorted(ran) == ["boom", "boom", "ok"]


def test_langgraph_caught_task_exception_then_a_second_invoke(store: durable.Store) -> None:
    """test_imp_exception: a task's exception caught by the entrypoint, which
    goes on and returns; the failure is in the history, not an outcome. A
    second invoke of the thread runs the tasks again in LangGraph; a
    completed durable run answers the same call from its record
    (identity.md), running nothing."""
    ran: list[str] = []

    @durable.step
    def my_task(number: int) -> int:
        ran.append("my_task")
        return number * 2

    @durable.step
    def task_with_exception(number: int) -> int:
        ran.append("task_with_exception")
        raise Exception("This is a test exception")

    @durable.workflow(store=store, run_id="thread-1")
    def my_workflow(number: int) -> str:
        my_task(number)
        try:
            task_with_exception(number)
        except Exception:
            pass
        my_task(number)
        return "done"

    assert my_workflow(1) == "done" and my_workflow(1) == "done"
    assert ran == ["my_task", "task_with_exception", "my_task"]
    history = my_workflow.history("thread-1")[1:]
    assert [(s.position, s.name.rsplit(".", 1)[-1], s.status) for s in history] == [
        (0, "my_task", "completed"),
        (1, "task_with_exception", "failed"),
        (2, "my_task", "completed"),
    ]


def test_langgraph_error_handler_after_a_crash(store: durable.Store) -> None:
    """test_error_handler_resumes_after_crash: a node fails, its error
    handler crashes; on resume LangGraph runs the handler again, not the
    node. A step's failure that the body catches is not its outcome in
    durable (gotchas.md): the resume runs the node again, then the handler,
    which sees the same error and recovers; make the node's failure its
    outcome (catch it inside the step) to keep it from running again."""
    calls = {"node": 0, "handler": 0}

    @durable.step
    def failing_node(foo: str) -> str:
        calls["node"] += 1
        raise RuntimeError("boom")

    @durable.step
    def handler(error: str) -> str:
        calls["handler"] += 1
        if calls["handler"] == 1:
            raise RuntimeError("handler crash")
        return f"recovered from {error}"

    @durable.workflow(store=store, run_id="t1")
    def graph(foo: str) -> str:
        try:
            return failing_node(foo)
        except RuntimeError as error:
            return handler(str(error))

    with pytest.raises(RuntimeError, match="handler crash"):
        graph("")
    assert calls == {"node": 1, "handler": 1}
    assert graph.resume("t1").value == "recovered from boom"
    assert calls == {"node": 2, "handler": 2}


def test_langgraph_retry_on_forms(store: durable.Store, clock: FakeClock) -> None:
    """test_should_retry_on_single_exception, _sequence_of_exceptions,
    _subclass_of_exception, _empty_sequence, _invalid_type, _callable: a
    class, a subclass and a list are retried; an empty sequence (LangGraph:
    "never"), a predicate, anything else and a BaseException never retried
    (Ctrl-C, CancelledError: it was taken, silently) are refused at once."""
    tries: list[str] = []

    @durable.step(retries=1, retry_delay=0, retry_on=OSError)
    def single(kind: str) -> str:
        tries.append(kind)
        if tries.count(kind) == 1:
            raise {"sub": ConnectionError, "os": OSError}.get(kind, ValueError)(kind)
        return kind

    @durable.step(retries=1, retry_delay=0, retry_on=[KeyError, ValueError])
    def listed(kind: str) -> str:
        return single(kind)  # a plain call inside a step: one try of single

    @durable.workflow(store=store, run_id=lambda kind, via: f"{kind}-{via}")
    def flow(kind: str, via: str) -> str:
        return listed(kind) if via == "list" else single(kind)

    assert flow("os", "class") == "os" and flow("sub", "class") == "sub"
    with pytest.raises(ValueError):
        flow("other", "class")
    assert flow("value", "list") == "value"  # ValueError: listed tried single twice
    assert tries == ["os", "os", "sub", "sub", "other", "value", "value"]
    never = [(KeyboardInterrupt,), asyncio.CancelledError]
    for retry_on in [(), lambda exc: True, 123, "ValueError", *never]:
        with pytest.raises(durable.ConfigurationError, match="retry_on must be an exception class"):
            durable.step(retries=1, retry_on=retry_on)  # type: ignore[call-overload]


# -- Prefect: tests/test_tasks.py ----------------------------------------------


def test_prefect_nested_task_retries_do_not_stack(store: durable.Store, clock: FakeClock) -> None:
    """test_nested_task_with_retries_on_inner_and_outer_task: Prefect runs a
    task called by a task with its retries: 2 x 2 = 4 tries. durable runs
    it as a plain call (caching.md, "Coming from Prefect"): only the outer
    step's retries apply, 2 tries; the run fails with the inner error."""
    count = {"inner": 0}

    @durable.step(retries=1, retry_delay=2.0)
    def inner_task() -> None:
        count["inner"] += 1
        raise Exception("oops")

    @durable.step(retries=1, retry_delay=3.0)
    def outer_task() -> None:
        inner_task()

    @durable.workflow(store=store, run_id="nested")
    def my_flow() -> None:
        outer_task()

    with pytest.raises(Exception, match="oops"):
        my_flow()
    assert count == {"inner": 2} and clock.slept == [3.0]
    assert [r.status for r in my_flow.runs()] == ["failed"]


def test_prefect_constructor_validation(store: durable.Store, clock: FakeClock) -> None:
    """test_task_cannot_configure_poorly_typed_retry_delay,
    test_task_accepts_fractional_retry_delay_seconds and
    test_warns_went_false_persist_result_and_cache_policy: a delay that is
    not a number (a dict; Prefect's list of delays, which durable has no
    counterpart of) is refused when the step is decorated; a fractional one
    is taken and waited; persist=False with cache= is refused (Prefect
    warns and drops the cache)."""
    for delay in [{"x": 4}, [0.5, 1.1, 2.7], "2"]:
        with pytest.raises(durable.ConfigurationError, match="retry_delay must be a number"):
            durable.step(retries=42, retry_delay=delay)  # type: ignore[call-overload]
    with pytest.raises(durable.ConfigurationError, match="persist=False"):
        durable.step(persist=False, cache=True)(lambda x: x)
    tries: list[int] = []

    @durable.step(retries=2, retry_delay=1.5, backoff=1.0)
    def task_with_float_delay() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise RuntimeError("try again!")
        return "success"

    @durable.workflow(store=store, run_id="fractional")
    def flow() -> str:
        return task_with_float_delay()

    assert flow() == "success" and clock.slept == [1.5, 1.5]


# -- Temporal: tests/worker/test_activity.py, test_workflow.py -------------------


class CanRetry(Exception):
    pass


class CannotRetry(Exception):
    pass


def test_temporal_non_retryable_error_type_and_backoff(
    store: durable.Store, clock: FakeClock
) -> None:
    """test_activity_error_non_retryable_type (and _non_retryable): with a
    budget of 100 tries, an error of a type not retried ends the tries at
    once and reaches the caller as raised, details and all;
    test_workflow_local_activity_backoff: one failed try, one timer of the
    initial interval, then the try that succeeds."""
    attempts: list[int] = []

    @durable.step(retries=99, retry_delay=2.0, retry_on=(CanRetry,))
    def some_activity(until: int) -> str:
        attempt = len(attempts) + 1
        attempts.append(attempt)
        if attempt < until:
            raise CanRetry("Retry me")
        if until > 2:
            raise CannotRetry("Do not retry me", "detail1", 123)
        return f"attempt: {attempt}"

    @durable.workflow(store=store, run_id=lambda until: f"activity-{until}")
    def flow(until: int) -> str:
        return some_activity(until)

    assert flow(2) == "attempt: 2" and clock.slept == [2.0]
    attempts.clear()
    with pytest.raises(CannotRetry) as err:
        flow(3)
    assert err.value.args == ("Do not retry me", "detail1", 123)
    assert attempts == [1, 2, 3] and clock.slept == [2.0, 2.0, 4.0]
    step = flow.history("activity-3")[1]
    assert [f.type for f in step.failures] == ["CanRetry", "CanRetry", "CannotRetry"]


# -- LangGraph: libs/langgraph/tests/test_pregel.py, durability ----------------


@pytest.mark.parametrize("durability", ["fsync", "batch", "none"])
def test_langgraph_imp_task_at_each_durability(tmp_path: Path, durability: str) -> None:
    """test_imp_task, by durability as LangGraph's: tasks mapped at once,
    then an interrupt; the resume with the answer runs no mapper again at
    any level (storage.md: a level says when a record is on stable storage)."""
    store = durable.open_store(tmp_path / "store", durability=durability)
    mapper_calls: list[int] = []

    @durable.step
    def mapper(value: int) -> str:
        mapper_calls.append(value)
        return str(value) * 2

    @durable.workflow(store=store, run_id="thread-1")
    def graph(values: list[int]) -> list[str]:
        with ThreadPoolExecutor(2) as pool:
            mapped = durable.loop_over(mapper, values, executor=pool)
        answer = durable.wait_for("question")
        return [m + answer for m in mapped]

    with pytest.raises(durable.Suspended, match="question"):
        graph([0, 1])
    assert sorted(mapper_calls) == [0, 1]
    run = graph.resume("thread-1", inputs={"question": "answer"})
    assert run.value == ["00answer", "11answer"] and sorted(mapper_calls) == [0, 1]


# -- PraisonAI: tests/test_workflow_patterns.py (hooks) -------------------------


def test_praisonai_workflow_hooks(store: durable.Store, clock: FakeClock) -> None:
    """test_on_workflow_start, _on_step_complete, _on_step_error and
    _on_workflow_complete, as durable.on_event's events (observability.md):
    a failed try retried, the run's end; a step that fails for good names
    itself and its error before the run's failure."""
    tries: list[int] = []

    @durable.step(retries=1, retry_delay=0)
    def flaky(limit: int) -> int:
        tries.append(limit)
        if len(tries) < limit:
            raise ValueError("Test error")
        return len(tries)

    @durable.workflow(store=store, run_id=lambda limit: f"hooks-{limit}")
    def flow(limit: int) -> int:
        return flaky(limit)

    seen: list[events.Event] = []
    with durable.on_event(seen.append):
        assert flow(2) == 2
        tries.clear()
        with pytest.raises(ValueError, match="Test error"):
            flow(3)
    kinds = [type(e).__name__ for e in seen]
    assert kinds == [
        "RunStarted", "StepRetried", "StepExecuted", "RunCompleted",
        "RunStarted", "StepRetried", "StepFailed", "RunFailed",
    ]  # fmt: skip
    failed = seen[-2]
    assert isinstance(failed, events.StepFailed) and failed.name == flaky.name
    assert "Test error" in failed.error and failed.attempt == 1
