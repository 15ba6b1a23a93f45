"""The tenth round of the peers' own test cases (see
tests/test_peer_ports_tenth.py): LangGraph's time travel
(libs/langgraph/tests/test_time_travel.py), a replay from the checkpoint
before a node, and the same interrupt replayed again and again, as forks
of a run at a position of its history; and Temporal's replay of asyncio
ordering (tests/worker/test_replayer.py). Executions are counted by the
step bodies themselves."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import durable


def _graph(store: durable.Store, called: list[str], *, ask: bool) -> durable.Workflow[..., list[str]]:
    @durable.step
    def node_a(value: list[str]) -> list[str]:
        called.append("node_a")
        return [*value, "a"]

    @durable.step
    def node_b(value: list[str]) -> list[str]:
        called.append("node_b")
        return [*value, "b"]

    @durable.workflow(store=store, name="graph")
    def graph(value: list[str]) -> list[str]:
        value = node_a(value)
        if ask:
            value = [*value, f"human:{durable.wait_for('What is your input?')}"]
        return node_b(value)

    return graph


def _position(graph: durable.Workflow[..., list[str]], run_id: str, name: str) -> int:
    return next(s.position for s in graph.history(run_id) if s.name.split(".")[-1] == name)


def test_langgraph_replay_reruns_nodes_after_checkpoint(store: durable.Store) -> None:
    """test_replay_reruns_nodes_after_checkpoint, test_replay_creates_branch_
    preserving_old_checkpoints: replayed from the checkpoint before node_b
    (a fork at node_b's position), node_b executes again and node_a does
    not; the fork is a run of its own and the source keeps its history."""
    called: list[str] = []
    graph = _graph(store, called, ask=False)
    assert graph.with_options(run_id="1")([]) == ["a", "b"]
    assert called == ["node_a", "node_b"]
    source = [(s.position, s.name, s.status) for s in graph.history("1")]
    called.clear()
    forked = graph.fork("1", at=_position(graph, "1", "node_b"), new_run_id="replay")
    assert forked.value == ["a", "b"] and called == ["node_b"]
    assert (forked.steps_replayed, forked.steps_executed) == (1, 1)
    assert [(s.position, s.name, s.status) for s in graph.history("1")] == source
    assert graph.with_options(run_id="1")([]) == ["a", "b"] and called == ["node_b"]


def test_langgraph_replay_interrupt_stable_across_replays(store: durable.Store) -> None:
    """test_replay_interrupt_stable_across_replays: the checkpoint before
    the interrupt replayed three times asks the same question each time
    (a fork at the wait's position suspends at it), with nothing executed
    again; each fork answered takes its own answer, and the source run
    keeps "cached_answer"."""
    called: list[str] = []
    graph = _graph(store, called, ask=True)
    with pytest.raises(durable.Suspended):
        graph.with_options(run_id="1")([])
    done = graph.resume("1", inputs={"What is your input?": "cached_answer"})
    assert done.value == ["a", "human:cached_answer", "b"]
    assert called == ["node_a", "node_b"]
    at = _position(graph, "1", "What is your input?")
    asked = []
    for n in range(3):
        with pytest.raises(durable.Suspended) as again:
            graph.fork("1", at=at, new_run_id=f"replay-{n}")
        asked.append(again.value.waiting_for)
    assert asked == ["What is your input?"] * 3 and called == ["node_a", "node_b"]
    for n in range(3):
        answered = graph.resume(f"replay-{n}", inputs={"What is your input?": f"new-{n}"})
        assert answered.value == ["a", f"human:new-{n}", "b"]
    assert called == ["node_a"] + ["node_b"] * 4
    assert graph.with_options(run_id="1")([]) == done.value
    assert called == ["node_a"] + ["node_b"] * 4


def test_temporal_replayer_async_ordering(store: durable.Store) -> None:
    """Temporal's test_replayer_async_ordering (tests/worker/test_replayer.py):
    a replay sees the asyncio order its first execution saw. durable differs
    on purpose (docs/gotchas.md, "Which async step finished first is timing,
    not a record"): three steps finish c, a, b the first time and together
    on a resume, so a step given the completion order is a changed call
    there, refused, nothing executed again; the documented remedy (decide
    on the values: sorted) resumes with no step executed twice."""
    ran: list[str] = []
    gates: dict[str, asyncio.Event] = {}

    @durable.step
    async def act(name: str, after: str) -> str:
        ran.append(name)
        if after:  # finishes once `after` has
            await gates[after].wait()
        gates[name].set()
        return name

    @durable.step
    def record(order: list[str]) -> str:
        ran.append("record")
        return ",".join(order)

    def make(decide: Callable[[list[str]], list[str]], run_id: str) -> Any:
        @durable.workflow(store=store, run_id=run_id, on_change="refuse", name=f"flow_{run_id}")
        async def flow() -> str:
            gates.update((n, asyncio.Event()) for n in "abc")
            pairs = (("a", "c"), ("b", "a"), ("c", ""))  # a after c, b after a
            steps = [asyncio.create_task(act(n, after)) for n, after in pairs]
            order = [await f for f in asyncio.as_completed(steps)]
            return record(decide(order)) + durable.wait_for("go")

        return flow

    async def twice(flow: Any, run_id: str) -> str:
        with pytest.raises(durable.Suspended):
            await flow()
        return (await flow.resume(run_id, inputs={"go": "!"})).value  # type: ignore[no-any-return]

    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        asyncio.run(twice(make(list, "as-seen"), "as-seen"))
    assert sorted(ran) == ["a", "b", "c", "record"]
    ran.clear()
    assert asyncio.run(twice(make(sorted, "on-values"), "on-values")) == "a,b,c!"
    assert sorted(ran) == ["a", "b", "c", "record"]
