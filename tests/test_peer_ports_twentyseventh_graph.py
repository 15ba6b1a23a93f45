"""The twenty-seventh round of the peers' own test cases (see
tests/test_peer_ports_twentyseventh.py): LangGraph's time travel around
interrupts and subgraphs, three levels deep too
(libs/langgraph/tests/test_time_travel.py) and its
retry policies (libs/langgraph/tests/test_retry.py). A checkpoint to replay
from is a position to fork at (`fork(run, at=)`), `update_state` is the
fork's `mutate=`, an `interrupt()` is a `wait_for` answered by
`resume(..., inputs=)`, a subgraph a child run. In-process; executions are
counted by the step bodies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.testing import fake_clock


def _store(tmp_path: Path) -> durable.Store:
    return durable.open_store(str(tmp_path))


def _asking(tmp_path: Path, counts: Counter[str]) -> durable.Workflow[[], list[str]]:
    @durable.step
    def node_a() -> list[str]:
        counts["node_a"] += 1
        return ["a"]

    @durable.step
    def ask_human(value: list[str], answer: str) -> list[str]:
        counts["ask_human"] += 1
        return [*value, f"human:{answer}"]

    @durable.step
    def node_b(value: list[str]) -> list[str]:
        counts["node_b"] += 1
        return [*value, "b"]

    @durable.workflow(store=_store(tmp_path), run_id="t1")
    def graph() -> list[str]:
        value = node_a()
        answer = durable.wait_for("input")  # interrupt("What is your input?")
        return node_b(ask_human(value, answer))

    return graph


def _answered(graph: durable.Workflow[[], list[str]], answer: str) -> None:
    with pytest.raises(durable.Suspended) as waiting:
        graph()
    assert waiting.value.waiting_for == "input"
    assert graph.resume("t1", inputs={"input": answer}).value == ["a", f"human:{answer}", "b"]


def test_langgraph_replay_from_before_interrupt_refires(tmp_path: Path) -> None:
    """test_replay_from_before_interrupt_refires: replayed from before the
    interrupt (a fork at the wait's position), the interrupt fires again;
    node_a is not run again and node_b not reached."""
    counts = Counter[str]()
    graph = _asking(tmp_path, counts)
    _answered(graph, "hello")
    with pytest.raises(durable.Suspended) as again:
        graph.fork("t1", at=1)
    assert again.value.waiting_for == "input" and again.value.run_id != "t1"
    assert counts == {"node_a": 1, "ask_human": 1, "node_b": 1}


def test_langgraph_replay_from_before_interrupt_then_resume(tmp_path: Path) -> None:
    """test_replay_from_before_interrupt_then_resume: the replay answered
    anew completes with the new answer; the original branch keeps its own
    (its history and value as they were), both runs listed."""
    counts = Counter[str]()
    graph = _asking(tmp_path, counts)
    _answered(graph, "old_answer")
    before = [(s.position, s.kind, s.value) for s in graph.history("t1")]
    with pytest.raises(durable.Suspended) as again:
        graph.fork("t1", at=1)
    fork_id = again.value.run_id
    assert graph.resume(fork_id, inputs={"input": "new_answer"}).value == ["a", "human:new_answer", "b"]
    assert [(s.position, s.kind, s.value) for s in graph.history("t1")] == before
    assert graph() == ["a", "human:old_answer", "b"]  # the original answers from its record
    assert sorted(i.run_id for i in graph.runs()) == sorted(["t1", fork_id])
    assert counts == {"node_a": 1, "ask_human": 2, "node_b": 2}


def test_langgraph_fork_from_before_interrupt_with_update_state(tmp_path: Path) -> None:
    """test_fork_from_before_interrupt_refires: `update_state` of the
    checkpoint before the interrupt is `mutate=` of node_a's output; the
    interrupt fires again (no answer is copied past the fork) and the
    answer given then completes the fork on the updated state."""
    counts = Counter[str]()
    graph = _asking(tmp_path, counts)
    _answered(graph, "hello")
    with pytest.raises(durable.Suspended) as again:
        graph.fork("t1", at=1, mutate=lambda value: [*value, "forked"])
    done = graph.resume(again.value.run_id, inputs={"input": "world"})
    assert done.value == ["a", "forked", "human:world", "b"]
    assert counts == {"node_a": 1, "ask_human": 2, "node_b": 2}


def test_langgraph_replay_from_the_final_checkpoint_after_the_interrupts(tmp_path: Path) -> None:
    """test_subgraph_time_travel_after_completion: two interrupts answered
    one after the other in a subgraph; replayed from the final checkpoint
    (a fork past the end) nothing runs and no interrupt fires."""
    counts = Counter[str]()
    store = _store(tmp_path)

    @durable.step
    def step_a() -> str:
        counts["step_a"] += 1
        return "step_a_done"

    @durable.workflow(store=store)
    def executor() -> list[str]:
        first = durable.wait_for("q1")
        second = durable.wait_for("q2")
        return [step_a(), f"ask_1:{first}", f"ask_2:{second}"]

    @durable.workflow(store=store, run_id="p")
    def parent() -> list[str]:
        return executor()

    for answers in ({}, {"q1": "answer_1"}):
        with pytest.raises(durable.Suspended):
            parent.resume("p", inputs=answers) if answers else parent()
    done = parent.resume("p", inputs={"q2": "answer_2"})
    assert done.value == ["step_a_done", "ask_1:answer_1", "ask_2:answer_2"]
    replay = parent.fork("p", at=1)
    assert replay.value == done.value and replay.steps_executed == 0
    assert counts == {"step_a": 1}


def test_langgraph_subgraph_replay_from_before(tmp_path: Path) -> None:
    """test_subgraph_replay_from_before and
    test_stateless_subgraph_starts_fresh_on_parent_replay: replayed from
    the parent's checkpoint before the subgraph, the subgraph's steps and
    the step after it run again, in a child run of the fork's own; the
    parent's first step does not."""
    called: list[str] = []
    store = _store(tmp_path)

    @durable.step
    def parent_node() -> list[str]:
        called.append("parent_node")
        return ["parent"]

    @durable.step
    def step_a(value: list[str]) -> list[str]:
        called.append("step_a")
        return [*value, "sub_a"]

    @durable.step
    def step_b(value: list[str]) -> list[str]:
        called.append("step_b")
        return [*value, "sub_b"]

    @durable.workflow(store=store)
    def subgraph(value: list[str]) -> list[str]:
        return step_b(step_a(value))

    @durable.step
    def post_process(value: list[str]) -> list[str]:
        called.append("post_process")
        return [*value, "post"]

    @durable.workflow(store=store, run_id="g")
    def graph() -> list[str]:
        return post_process(subgraph(parent_node()))

    assert graph() == ["parent", "sub_a", "sub_b", "post"]
    called.clear()
    replay = graph.fork("g", at=1)
    assert replay.value == ["parent", "sub_a", "sub_b", "post"]
    assert called == ["step_a", "step_b", "post_process"]
    kids = subgraph.runs()
    assert len(kids) == 2 and len({k.parent for k in kids}) == 2


def test_langgraph_retry_on_a_sequence_and_a_subclass(tmp_path: Path) -> None:
    """test_should_retry_on_sequence_of_exceptions and
    test_should_retry_on_subclass_of_exception: `retry_on` of two types
    retries either and a subclass of one; another error is not retried."""
    counts = Counter[str]()

    class CustomError(ValueError):
        pass

    errors = iter([CustomError("sub"), KeyError("key"), None, TypeError("other")])

    @durable.step(retries=3, retry_delay=0.01, retry_on=(ValueError, KeyError))
    def node(tag: str) -> str:
        counts[tag] += 1
        error = next(errors)
        if error is not None:
            raise error
        return "ok"

    @durable.workflow(store=_store(tmp_path), run_id="r")
    def graph() -> list[str]:
        first = node("first")
        try:
            return [first, node("second")]
        except TypeError as e:
            return [first, f"not retried: {e}"]

    with fake_clock() as clock:
        assert graph() == ["ok", "not retried: other"]
        assert graph() == ["ok", "not retried: other"]
    assert counts == {"first": 3, "second": 1}
    assert clock.slept == [0.01, 0.02]


def test_langgraph_graph_with_max_attempts_exceeded(tmp_path: Path) -> None:
    """test_graph_with_max_attempts_exceeded: `max_attempts=2` is
    `retries=1`: the node's own error after 2 tries, one sleep of the
    initial interval between them; each try noted in the run's history."""
    counts = Counter[str]()

    @durable.step(retries=1, retry_delay=0.01, retry_on=ValueError)
    def always_failing() -> None:
        counts["node"] += 1
        raise ValueError("Always fails")

    @durable.workflow(store=_store(tmp_path), run_id="m")
    def graph() -> None:
        always_failing()

    with fake_clock() as clock, pytest.raises(ValueError, match="Always fails"):
        graph()
    assert counts == {"node": 2} and clock.slept == [0.01]
    (step,) = [s for s in graph.history("m") if s.kind == "step"]
    assert (step.status, step.attempts) == ("failed", 2)


def _three_levels(tmp_path: Path, counts: Counter[str]) -> tuple[durable.Workflow[[], str], durable.Workflow[[], str]]:
    store = _store(tmp_path)

    @durable.step
    def step_a() -> str:
        counts["step_a"] += 1
        return "a"

    @durable.step
    def after(value: str) -> str:
        counts["after"] += 1
        return value + "!"

    @durable.workflow(store=store)
    def inner() -> str:
        value = step_a()
        return after(f"{value}:{durable.wait_for('q')}")

    @durable.workflow(store=store)
    def middle() -> str:
        return f"m({inner()})"

    @durable.step
    def pre() -> str:
        counts["pre"] += 1
        return "pre"

    @durable.workflow(store=store, run_id="top")
    def top() -> str:
        return pre() + "/" + middle()

    return top, inner


def test_langgraph_3_levels_deep_time_travel_to_first_interrupt(tmp_path: Path) -> None:
    """test_3_levels_deep_time_travel_to_first_interrupt and
    test_subgraph_interrupt_replay_from_parent_then_resume: an interrupt
    two subgraphs down; replayed from the parent's checkpoint before the
    subgraph, the interrupt fires again in the fork's own grandchild
    (named by `Suspended.child`); answered anew, the fork completes with
    the new answer, the original keeps its own, the parent's first step
    never runs again."""
    counts = Counter[str]()
    top, inner = _three_levels(tmp_path, counts)
    with pytest.raises(durable.Suspended) as first:
        top()
    assert (first.value.run_id, first.value.child, first.value.waiting_for) == ("top", "top.1.0", "q")
    assert top.resume("top", inputs={"q": "one"}).value == "pre/m(a:one!)"
    with pytest.raises(durable.Suspended) as again:
        top.fork("top", at=1)
    fork_id = again.value.run_id
    assert again.value.child == f"{fork_id}.1.0" and again.value.waiting_for == "q"
    assert top.resume(fork_id, inputs={"q": "two"}).value == "pre/m(a:two!)"
    assert top() == "pre/m(a:one!)"
    assert counts == {"pre": 1, "step_a": 2, "after": 2}
    assert sorted(i.run_id for i in inner.runs()) == sorted(["top.1.0", f"{fork_id}.1.0"])


def test_langgraph_subgraph_replay_from_subgraph_checkpoint(tmp_path: Path) -> None:
    """test_subgraph_replay_from_subgraph_checkpoint: replayed from the
    subgraph's own checkpoint before its interrupt (a fork of the child
    run), the interrupt fires again there; the fork is a run of its own
    (no parent), and the parent and its child are left as they were."""
    counts = Counter[str]()
    top, inner = _three_levels(tmp_path, counts)
    with pytest.raises(durable.Suspended):
        top()
    top.resume("top", inputs={"q": "one"})
    with pytest.raises(durable.Suspended) as again:
        inner.fork("top.1.0", at=1)
    assert again.value.child is None and again.value.waiting_for == "q"
    assert inner.resume(again.value.run_id, inputs={"q": "three"}).value == "a:three!"
    listed = {i.run_id: i.parent for i in inner.runs()}
    assert listed[again.value.run_id] is None and listed["top.1.0"] is not None
    assert top() == "pre/m(a:one!)"
    assert counts == {"pre": 1, "step_a": 1, "after": 2}
