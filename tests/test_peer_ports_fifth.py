"""A fifth round of the peers' own test cases, ported to durable's API:
DBOS Transact (tests/test_failures.py error serialization,
tests/test_workflow_introspection.py child reruns and step histories),
LangGraph (libs/langgraph/tests/test_time_travel.py: replays and forks
around interrupts) and joblib (joblib/test/test_memory.py cache validation).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves; tests/test_peer_ports.py,
test_peer_ports_more.py, test_peer_ports_third.py and
test_peer_ports_fourth.py hold the earlier ports."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from pathlib import Path

import pytest

import durable

# -- DBOS: tests/test_failures.py ---------------------------------------------


class BadException(Exception):
    """test_failures.py's BadException: it pickles, but its __init__ takes
    two arguments where unpickling passes one, so it cannot be unpickled."""

    def __init__(self, one: int, two: int) -> None:
        super().__init__(f"Message: {one}, {two}")


def test_dbos_workflow_error_serialization(store: durable.Store) -> None:
    """test_workflow_error_serialization: a step raising an exception that
    cannot be unpickled. The caller gets the exception itself; the run is
    listed as failed with the error, and its step's history holds it; the
    next call runs the step again (a failed step is no outcome)."""
    ran: list[int] = []

    @durable.step
    def step() -> None:
        ran.append(1)
        raise BadException(1, 2)

    @durable.workflow(store=store, run_id="bad")
    def workflow() -> None:
        step()

    for _ in range(2):
        with pytest.raises(BadException, match="Message: 1, 2"):
            workflow()
    [info] = workflow.runs()
    assert (info.status, info.error) == ("failed", "BadException: Message: 1, 2")
    [failed] = workflow.history("bad")[1:]
    assert failed.status == "failed" and failed.error == "BadException: Message: 1, 2"
    assert [f.type for f in failed.failures] == ["BadException", "BadException"]
    assert ran == [1, 1]


class BrokenReduce(Exception):
    """An exception whose own `__reduce__` gives what its `__init__` refuses:
    it cannot travel back as itself."""

    def __init__(self, what: str) -> None:
        super().__init__(what)

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (BrokenReduce, ())


def refuse_once(item: tuple[str, int]) -> int:
    """An item of a process pool: logs itself, and item 1 raises while the
    flag file exists (a BadException, or a BrokenReduce if it says so)."""
    log, i = item
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{i}\n".encode())
    os.close(fd)
    flag = Path(log + ".fail")
    if i == 1 and flag.exists():
        raise BrokenReduce("no way back") if flag.read_text() else BadException(1, 2)
    return i * 10


refuse_once_step = durable.step(name="refuse_once")(refuse_once)


@pytest.mark.slow
def test_dbos_workflow_error_serialization_in_a_process_pool(tmp_path: Path) -> None:
    """test_workflow_error_serialization with the step run over items on a
    process pool (DBOS queues): the worker's BadException travels back to
    the workflow process. The block fails with the item's own exception,
    same type and message, the item named (fan-out.md, "Failures"), not
    with a TypeError from BadException.__init__; the items kept are not run
    again, and the next call runs item 1 only."""
    log = str(tmp_path / "log")
    Path(log + ".fail").touch()
    items = [(log, i) for i in range(3)]

    @durable.workflow(store=str(tmp_path / "store"), run_id="pooled")
    def fan(items: list[tuple[str, int]]) -> list[int]:
        fork = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(1, mp_context=fork) as pool:
            return durable.loop_over(refuse_once_step, items, executor=pool, checkpoint_items=True)

    with pytest.raises(BadException) as caught:
        fan(items)
    text = str(caught.value) + " ".join(getattr(caught.value, "__notes__", []))
    assert text.startswith("Message: 1, 2") and "item 1 (of 3) of loop_over(refuse_once)" in text
    assert "BadException" in str(caught.value.__cause__)  # the worker's traceback
    [block] = fan.history("pooled")[1:]
    assert block.error is not None and "BadException: Message: 1, 2" in block.error
    Path(log + ".fail").unlink()
    assert fan(items) == [0, 10, 20]
    assert sorted(Path(log).read_text().split()) == ["0", "1", "1", "2"]

    # One that cannot come back as itself comes back as its type and message.
    Path(log + ".fail").write_text("broken")
    with pytest.raises(RuntimeError, match="BrokenReduce: no way back"):
        fan.with_options(run_id="broken")(items)



# -- LangGraph: libs/langgraph/tests/test_time_travel.py --------------------


def _two_questions(store: durable.Store, called: list[str]) -> durable.Workflow[..., list[str]]:
    """test_time_travel.py's graph: node_a, two interrupt nodes, node_b; a
    node is a step, an interrupt a `wait_for` (positions 0, 1, 2, 3)."""

    @durable.step
    def node(name: str) -> str:
        called.append(name)
        return name[-1]

    @durable.workflow(store=store, run_id="thread-1")
    def graph() -> list[str]:
        first = durable.wait_for("first") if node("node_a") else ""
        second = durable.wait_for("second")
        return ["a", f"i1:{first}", f"i2:{second}", node("node_b")]

    return graph


def _answered(graph: durable.Workflow[..., list[str]], run_id: str, **answers: str) -> list[str]:
    """Resume `run_id` with one answer at a time, as LangGraph's Command(resume=...)."""
    for name, answer in answers.items():
        try:
            return graph.resume(run_id, inputs={name: answer}).value
        except durable.Suspended as waiting:
            assert waiting.waiting_for is not None and waiting.waiting_for != name
    raise AssertionError("still waiting")


def test_langgraph_sequential_interrupts_fork_from_middle(store: durable.Store) -> None:
    """test_sequential_interrupts_fork_from_middle, test_copy_fork_retriggers_
    interrupt: forked from between the two interrupts, only the second
    fires again and the first answer is kept; forked from before the first,
    the first fires again. test_replay_from_final_checkpoint_is_noop: a
    fork from the end runs nothing. test_multiple_forks_from_same_checkpoint,
    test_fork_creates_branch_preserving_old_checkpoints: forks are runs of
    their own, and the source keeps its records and value."""
    called: list[str] = []
    graph = _two_questions(store, called)
    with pytest.raises(durable.Suspended) as waiting:
        graph()
    assert waiting.value.waiting_for == "first"
    done = ["a", "i1:ans1", "i2:ans2", "b"]
    assert _answered(graph, "thread-1", first="ans1", second="ans2") == done
    assert called == ["node_a", "node_b"]
    source = [(s.position, s.name, s.status) for s in graph.history("thread-1")]

    for fork_id, answer in [("mid-1", "new_b"), ("mid-2", "other")]:
        with pytest.raises(durable.Suspended) as again:
            graph.fork("thread-1", at=2, new_run_id=fork_id)
        assert again.value.waiting_for == "second"
        expected = ["a", "i1:ans1", f"i2:{answer}", "b"]
        assert _answered(graph, fork_id, second=answer) == expected
    assert called == ["node_a", "node_b", "node_b", "node_b"]  # node_a never again

    with pytest.raises(durable.Suspended) as before:
        graph.fork("thread-1", at=1, new_run_id="before-i1")
    assert before.value.waiting_for == "first"
    end = graph.fork("thread-1", at=4, new_run_id="copy")
    assert end.value == done and (end.steps_replayed, end.steps_executed) == (4, 0)
    assert called == ["node_a", "node_b", "node_b", "node_b"]
    assert [(s.position, s.name, s.status) for s in graph.history("thread-1")] == source
    assert graph.run().value == done  # the source's value, nothing run


def test_langgraph_fork_with_an_updated_answer(store: durable.Store) -> None:
    """test_fork_reruns_with_modified_state with the state an interrupt's
    answer (update_state on the checkpoint after it): a fork whose mutate
    replaces the first answer runs on with it and asks the second again;
    a resume that gives the replaced answer again is refused, the new one
    accepted (managing-runs.md, fork)."""
    called: list[str] = []
    graph = _two_questions(store, called)
    with pytest.raises(durable.Suspended):
        graph()
    _answered(graph, "thread-1", first="ans1", second="ans2")
    with pytest.raises(durable.Suspended) as waiting:
        graph.fork("thread-1", at=2, new_run_id="edited", mutate=lambda old: old + "-edited")
    assert waiting.value.waiting_for == "second"
    with pytest.raises(durable.ConfigurationError, match="already recorded at position 1"):
        graph.resume("edited", inputs={"first": "ans1", "second": "x"})
    run = graph.resume("edited", inputs={"first": "ans1-edited", "second": "x"})
    assert run.value == ["a", "i1:ans1-edited", "i2:x", "b"]
    assert called == ["node_a", "node_b", "node_b"]


# -- DBOS: tests/test_workflow_introspection.py -------------------------------


def test_dbos_callchild_rerun_sync(store: durable.Store) -> None:
    """test_callchild_rerun_sync: the parent makes its child's id in the body
    (uuid4, outside a step) and calls it; the same parent id again gives the
    same result. In durable that holds for a completed parent (its value,
    the body not run) and for one resumed after a failure past the child:
    the child's result is recorded at its position, so the replayed parent
    never enters a child of the new id (identity.md, "Child runs")."""
    import uuid

    entered: list[str] = []
    failing = [True]

    @durable.workflow(store=store)
    def child_workflow() -> str:
        run = durable.current_run()
        assert run is not None
        entered.append(run.run_id)
        return run.run_id

    @durable.step
    def after() -> None:
        if failing and failing.pop():
            raise ConnectionError("the step after the child fails once")

    @durable.workflow(store=store)
    def parent_workflow() -> str:
        got = child_workflow.with_options(run_id=f"child-{uuid.uuid4().hex}")()
        after()
        return got

    parent = parent_workflow.with_options(run_id="parent")
    with pytest.raises(ConnectionError):
        parent()
    res1 = parent.run()
    res2 = parent.run()
    assert res1.value == res2.value == entered[0] and len(entered) == 1
    assert (res1.steps_replayed, res1.steps_executed) == (1, 1)
    assert [info.run_id for info in child_workflow.runs()] == entered


def test_dbos_list_steps_errors(store: durable.Store) -> None:
    """test_list_steps_errors: a failing step called by the workflow, and
    one run as a child workflow (DBOS: start_workflow, then getResult). The
    parent's steps list the failure where it happened: the step's error at
    its position; for the child, its position (kind "workflow") with the
    error and the child's run id, which `durable show` follows. Once the
    step is fixed, the resumed parent completes the child at that position,
    its failed try still listed. A child that suspends has not failed."""
    broken = [True]

    @durable.step
    def failing_step() -> str:
        if broken[0]:
            raise Exception("fail")
        return "fixed"

    @durable.workflow(store=store)
    def child() -> str:
        return failing_step()

    @durable.workflow(store=store, run_id="call")
    def call_step() -> str:
        return failing_step()

    @durable.workflow(store=store, run_id="start")
    def start_step() -> str:
        return child()

    for flow, run_id, kind in [(call_step, "call", "step"), (start_step, "start", "workflow")]:
        with pytest.raises(Exception, match="fail"):
            flow()
        [failed] = flow.history(run_id)[1:]
        assert (failed.position, failed.kind, failed.status) == (0, kind, "failed")
        assert failed.error == "Exception: fail" and failed.value is None
    [failed] = start_step.history("start")[1:]
    assert failed.name == child.name and failed.child == "start.0"
    assert child.history("start.0")[1].error == "Exception: fail"

    broken[0] = False
    assert start_step() == "fixed"
    [done] = start_step.history("start")[1:]
    assert (done.kind, done.status, done.child, done.attempts) == ("workflow", "completed", "start.0", 2)
    assert [f.message for f in done.failures] == ["fail"]

    @durable.workflow(store=store)
    def asking() -> str:
        return durable.wait_for("answer")

    @durable.workflow(store=store, run_id="ask")
    def asks() -> str:
        return asking()

    with pytest.raises(durable.Suspended):  # a child waiting has not failed
        asks()
    assert asks.history("ask")[1:] == []
    assert asks.resume("ask", inputs={"answer": "x"}).value == "x"
    [answered] = asks.history("ask")[1:]
    assert (answered.status, answered.attempts, answered.failures) == ("completed", 1, ())
