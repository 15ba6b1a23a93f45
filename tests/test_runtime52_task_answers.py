"""An answer given to a run stopped at a wait is that wait's. In an async
run whose tasks wait for inputs of one name (`review(doc)` for each doc,
each summarising before it asks), the run said it waited at the wait one
task reached first (position 0.1.1); on resume the other task's step
replayed at once, its wait (0.0.1) was reached first and took the answer
given for 0.1.1: a decision recorded for the document nobody reviewed. An
unbound answer now goes to the wait the run stopped at, as `name@POSITION`
does, also when it is a child run's (each document reviewed by a workflow
of its own); another wait of its name reached first suspends the run there.
Edited code or other arguments may move the wait: then, as before, the
first wait of its name without an answer takes it (test_peer_ports_fourth)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import durable

ran: list[str] = []


@durable.step
async def summarise(doc: str) -> str:
    ran.append(doc)
    if doc == "a":
        await asyncio.sleep(0)  # a yield: b's task reaches its wait first, live
    return doc.upper()


async def review(doc: str) -> str:
    summary = await summarise(doc)
    return f"{summary}:{durable.wait_for('approval')}"


@durable.workflow
async def reviews() -> list[str]:
    return list(await asyncio.gather(review("a"), review("b")))


def _suspended(flow: durable.AsyncWorkflow[[], list[str]], **inputs: str) -> durable.Suspended:
    with pytest.raises(durable.Suspended) as caught:
        asyncio.run(flow.resume("r", inputs=inputs) if inputs else flow())
    return caught.value


def test_an_answer_goes_to_the_wait_the_run_said_it_stopped_at() -> None:
    ran.clear()
    flow = reviews.with_options(store=f"memory://r52-{uuid.uuid4().hex}", run_id="r")
    assert str(_suspended(flow).position) == "0.1.1"  # b's wait, reached while a summarised
    with pytest.warns(UserWarning, match=r"at position 0\.0\.1; .* at position 0\.1\.1"):
        again = _suspended(flow, approval="b is fine")
    assert str(again.position) == "0.0.1"  # a's wait asks; b's answer was not given to it
    inputs = [(str(s.position), s.preview) for s in flow.history("r") if s.kind == "input"]
    assert inputs == []
    assert str(_suspended(flow, approval="a is fine").position) == "0.1.1"
    done = asyncio.run(flow.resume("r", inputs={"approval": "b is fine"}))
    assert done.value == ["A:a is fine", "B:b is fine"]
    assert sorted(ran) == ["a", "b"]  # each summary ran once


def test_a_sync_run_still_takes_one_answer_a_round() -> None:
    """The wait a sync run stops at is the first without an answer: as before."""
    @durable.workflow
    def rounds() -> list[str]:
        return [str(durable.wait_for("decision")) for _ in range(2)]

    flow = rounds.with_options(store=f"memory://r52s-{uuid.uuid4().hex}", run_id="s")
    with pytest.raises(durable.Suspended):
        flow()
    with pytest.raises(durable.Suspended) as caught:
        flow.resume("s", inputs={"decision": "one"})
    assert caught.value.position == 1
    assert flow.resume("s", inputs={"decision": "two"}).value == ["one", "two"]


@durable.workflow
async def review_run(doc: str) -> str:
    return await review(doc)


@durable.workflow
async def review_runs() -> list[str]:
    return list(await asyncio.gather(review_run("a"), review_run("b")))


def test_an_answer_goes_to_the_child_run_the_run_said_waits() -> None:
    ran.clear()
    flow = review_runs.with_options(store=f"memory://r52c-{uuid.uuid4().hex}", run_id="r")
    first = _suspended(flow)
    assert (first.run_id, first.child, first.position) == ("r", "r.0.1.0", 1)  # b's run
    with pytest.warns(UserWarning, match=r"'r\.0\.0\.0' waits .* of run 'r\.0\.1\.0'"):
        again = _suspended(flow, approval="b is fine")
    assert again.child == "r.0.0.0"  # b's run, a run of its own, took its answer meanwhile
    done = asyncio.run(flow.resume("r", inputs={"approval": "a is fine"}))
    assert done.value == ["A:a is fine", "B:b is fine"]
    assert sorted(ran) == ["a", "b"]
