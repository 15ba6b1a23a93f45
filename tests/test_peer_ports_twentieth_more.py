"""The twentieth round of the peers' own test cases (see
tests/test_peer_ports_twentieth.py), DBOS's step timeouts
(tests/test_failures.py `test_step_timeout_with_retries`,
`test_step_timeout_is_checkpointed_and_replayed`). durable has no
`timeout_seconds=`: the step bounds its own wait (`asyncio.wait_for`), and
the `TimeoutError` it raises is an ordinary failure: retried with a fresh
budget per attempt, each attempt recorded, never a finished step. A
workflow that catches it completes, and called again answers from its
record without running the step. And LangGraph's subgraph interrupts
(libs/langgraph/tests/test_pregel.py `test_interrupt_subgraph`,
`Command(resume=...)` given again with another value): a child run's
answered `wait_for` keeps its recorded answer when the parent is resumed
with another one (a warning says so); a fork of the parent at the child's
position answers it anew. And Prefect's INPUTS cache policy
(tests/test_cache_policies.py `TestInputsPolicy`) over inputs that hold
themselves (a list in itself, a dict in itself, a dataclass pointing at
itself) or share one object twice: a hit for the same structure, a miss
once anything inside the cycle changed. In-process; executions are
counted by the step bodies."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from typing import Any

import pytest

import durable

CALLS: dict[str, int] = {}


async def _never() -> None:
    await asyncio.Event().wait()  # nothing sets it: only the timeout ends the wait


@durable.step(retries=2, retry_delay=0.0)
async def flaky() -> str:
    CALLS["flaky"] += 1
    if CALLS["flaky"] == 1:
        await asyncio.wait_for(_never(), 0.05)  # attempt 1 spends its whole budget
    return "done"


@durable.step(retries=2, retry_delay=0.0)
async def always_slow() -> None:
    CALLS["always_slow"] += 1
    await asyncio.wait_for(_never(), 0.02)


@durable.step(retries=2, retry_delay=0.0, retry_on=(ValueError,))
async def no_retry() -> None:
    CALLS["no_retry"] += 1
    await asyncio.wait_for(_never(), 0.02)


@durable.workflow
async def timed(kind: str) -> str | None:
    step = {"flaky": flaky, "always_slow": always_slow, "no_retry": no_retry}[kind]
    return await step()


@durable.step
async def slow_step() -> str:
    CALLS["slow_step"] += 1
    await asyncio.wait_for(_never(), 0.02)
    return "should-not-reach"


@durable.workflow
async def catching() -> str:
    try:
        return await slow_step()
    except asyncio.TimeoutError:  # TimeoutError from 3.11 on, its own class on 3.10
        return "caught"


@pytest.fixture(autouse=True)
def counted(store: durable.Store) -> None:
    durable.configure(store=store)
    CALLS.update(flaky=0, always_slow=0, no_retry=0, slow_step=0, draft=0, publish=0, notify=0, shape=0)


def test_dbos_step_timeout_with_retries() -> None:
    """A timed-out attempt is retried with a fresh budget: 2 attempts; all
    attempts timing out: max attempts (3), then the TimeoutError; a
    `retry_on` that leaves TimeoutError out (DBOS's should_retry): 1."""
    assert asyncio.run(timed("flaky")) == "done"
    assert CALLS["flaky"] == 2
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(timed("always_slow"))
    assert CALLS["always_slow"] == 3
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(timed("no_retry"))
    assert CALLS["no_retry"] == 1
    assert asyncio.run(timed("flaky")) == "done"  # the completed run answers
    assert CALLS["flaky"] == 2
    run = timed.runs()
    assert sorted(r.status for r in run) == ["completed", "failed", "failed"]


def test_dbos_step_timeout_is_recorded_and_the_catching_run_replays() -> None:
    """The timeout is the step's recorded failure (type TimeoutError), not a
    finished step; the workflow that caught it completed, and called again
    answers "caught" without running the step (DBOS: 1 invocation)."""
    assert asyncio.run(catching()) == "caught"
    assert asyncio.run(catching()) == "caught"
    assert CALLS["slow_step"] == 1
    (info,) = catching.runs()
    steps = [s for s in catching.history(info.run_id) if s.name == "slow_step"]
    assert [(s.status, s.attempts) for s in steps] == [("failed", 1)]
    assert [f.type for f in steps[0].failures] == ["TimeoutError"]


@durable.step
def draft(topic: str) -> str:
    CALLS["draft"] += 1
    return f"draft {topic}"


@durable.step
def publish(text: str, ok: str) -> str:
    CALLS["publish"] += 1
    return f"{text}: {ok}"


@durable.workflow
def review(topic: str) -> str:
    text = draft(topic)
    return publish(text, durable.wait_for("approve"))


@durable.step
def notify(value: str) -> str:
    CALLS["notify"] += 1
    if CALLS["notify"] == 1:
        raise RuntimeError("mail down")
    return value.upper()


@durable.workflow(run_id="parent")
def parent(topic: str) -> str:
    return notify(review(topic))


def test_langgraph_subgraph_interrupt_resumed_again_with_another_value() -> None:
    with pytest.raises(durable.Suspended) as waiting:
        parent("owls")
    assert (waiting.value.child, waiting.value.waiting_for) == ("parent.0", "approve")
    with pytest.raises(RuntimeError, match="mail down"):
        parent.resume("parent", inputs={"approve": "yes"})
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        done = parent.resume("parent", inputs={"approve": "no"})
    assert done.value == "DRAFT OWLS: YES"  # the recorded answer, never replaced
    assert any("already recorded input 'approve'" in str(w.message) for w in said)
    assert (CALLS["draft"], CALLS["publish"], CALLS["notify"]) == (1, 1, 2)
    # To answer it anew: a fork before the child, whose child is a new run.
    with pytest.raises(durable.Suspended):
        parent.fork("parent", at=0, new_run_id="parent-no")
    assert parent.resume("parent-no", inputs={"approve": "no"}).value == "DRAFT OWLS: NO"
    assert (CALLS["draft"], CALLS["publish"], CALLS["notify"]) == (2, 2, 3)
    assert parent("owls") == "DRAFT OWLS: YES"  # the first run, called again, answers
    assert (CALLS["draft"], CALLS["publish"], CALLS["notify"]) == (2, 2, 3)


@durable.step(cache=True)
def shape(value: Any) -> str:
    CALLS["shape"] += 1
    return repr(value)


@dataclasses.dataclass
class Node:
    value: int
    next: Any = None


def test_prefect_inputs_that_hold_themselves() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    mapping: dict[str, Any] = {"k": 1}
    mapping["self"] = mapping
    node = Node(1)
    node.next = node
    first, second = [1], [2]
    for value in (looped, mapping, node, [first, second, first]):
        assert shape(value) == shape(value) == repr(value)
    assert CALLS["shape"] == 4  # one miss each, then a hit
    looped[0], mapping["k"], node.value = 2, 2, 2
    for value in (looped, mapping, node, [first, second, second]):
        assert shape(value) == repr(value)  # changed inside the cycle: computed
    assert CALLS["shape"] == 8
