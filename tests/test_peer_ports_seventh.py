"""A seventh round of the peers' own test cases, ported to durable's API:
PraisonAI (src/praisonai-agents/tests/unit/agent/test_durable_run.py: run
lifecycle, cancellation of overlapping turns, fatal and retryable tool
errors, resume checks; tests/unit/checkpoints/test_checkpoints.py: a file
each turn rewrites) and DBOS Transact (tests/test_queue.py: cancelling
queued work). tests/test_peer_ports_eighth.py holds the rest of the round
(LangGraph, Prefect, Temporal).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves; tests/test_peer_ports*.py hold the
earlier rounds."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import durable
from durable.testing import FakeClock

# -- PraisonAI: tests/unit/agent/test_durable_run.py ---------------------------


def test_praisonai_overlapping_turns_cancel_only_their_own_run(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_agent_chat_isolates_stop_reason_across_overlapping_turns: two
    turns of one agent run at once in threads; the one cancelled ends
    `cancelled` after its step in flight, the other completes every step.
    durable's request_stop() is process-wide by design (steering.md), so a
    turn is cancelled by its run id, as PraisonAI does with a token per turn."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[tuple[str, int]] = []
    entered = {t: threading.Event() for t in ("cancelled", "completed")}
    go = threading.Event()

    @durable.step
    def work(task: str, i: int) -> int:
        ran.append((task, i))
        if i == 0:
            entered[task].set()
            assert go.wait(10)
        return i

    @durable.workflow(store=store, run_id=lambda task: f"turn-{task}")
    def turn(task: str) -> list[int]:
        return [work(task, i) for i in range(3)]

    outcome: dict[str, object] = {}

    def drive(task: str) -> None:
        try:
            outcome[task] = turn(task)
        except durable.Cancelled as cancelled:
            outcome[task] = cancelled

    threads = [threading.Thread(target=drive, args=(t,)) for t in entered]
    for thread in threads:
        thread.start()
    assert all(event.wait(10) for event in entered.values())
    assert turn.cancel("turn-cancelled").status == "cancelling"
    go.set()
    for thread in threads:
        thread.join()
    assert outcome["completed"] == [0, 1, 2]
    assert isinstance(outcome["cancelled"], durable.Cancelled)
    assert sorted(ran) == [("cancelled", 0), ("completed", 0), ("completed", 1), ("completed", 2)]
    statuses = {r.run_id: r.status for r in turn.runs()}
    assert statuses == {"turn-cancelled": "cancelled", "turn-completed": "completed"}
    assert turn.recover() == []  # neither is left for recovery


def test_praisonai_cancelled_async_turn_is_interrupted_and_resumes(store: durable.Store) -> None:
    """test_agent_achat_task_cancellation_finalizes_run, with LangGraph's
    test_arun_with_retry_external_cancel_propagates_as_cancelled: an async
    run's task cancelled mid-step raises CancelledError, untried again even
    by retry_on=(BaseException,), and leaves the run `interrupted` (PraisonAI:
    `cancelled`); its resume runs the cancelled step once more (identity.md)."""
    ran: list[str] = []
    started = asyncio.Event()

    @durable.step
    async def think(task: str) -> str:
        ran.append("think")
        return f"plan for {task}"

    @durable.step(retries=2, retry_delay=0, retry_on=(BaseException,))
    async def call_tool(plan: str) -> str:
        ran.append("tool")
        if ran.count("tool") == 1:
            started.set()
            await asyncio.Event().wait()  # until cancelled
        return f"{plan}: done"

    @durable.workflow(store=store, run_id="achat")
    async def achat(task: str) -> str:
        return await call_tool(await think(task))

    async def cancel_the_turn() -> None:
        task = asyncio.create_task(achat("task"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_the_turn())
    assert ran == ["think", "tool"] and [r.status for r in achat.runs()] == ["interrupted"]
    run = asyncio.run(achat.resume("achat"))
    assert run.value == "plan for task: done" and (run.steps_replayed, run.steps_executed) == (1, 1)
    assert ran == ["think", "tool", "tool"]


@pytest.mark.parametrize("retries", [0, 3])
def test_praisonai_a_cancelled_turn_that_then_fails_ends_cancelled(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, retries: int
) -> None:
    """test_agent_chat_isolates_stop_reason_across_overlapping_turns, the
    cancelled turn, which ended in what is otherwise a failure: `cancelled`
    all the same (DBOS: a cancelled workflow records no error). A step that
    fails after the cancel is not tried again; the run ends `cancelled`
    (steering.md): it was tried 4 times and ended `failed`."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    tries: list[int] = []
    entered, go = threading.Event(), threading.Event()

    @durable.step(retries=retries, retry_delay=0)
    def charge(amount: int) -> str:
        tries.append(amount)
        entered.set()
        assert go.wait(10)
        raise ConnectionError("the payment service is down")

    @durable.workflow(store=store, run_id="turn")
    def turn(amount: int) -> str:
        return charge(amount)

    def cancel_in_flight() -> None:
        assert entered.wait(10)
        assert turn.cancel("turn").status == "cancelling"
        go.set()

    canceller = threading.Thread(target=cancel_in_flight)
    canceller.start()
    with pytest.raises(durable.Cancelled) as cancelled:
        turn(10)
    canceller.join()
    assert cancelled.value.run_id == "turn"
    assert tries == [10] and [r.status for r in turn.runs()] == ["cancelled"]
    [step] = [s for s in turn.history("turn") if s.position == 0]
    assert [f.type for f in step.failures] == ["ConnectionError"]  # the try that failed, kept
    assert turn.recover() == [] and tries == [10]


def test_praisonai_resume_of_another_task_is_refused(store: durable.Store) -> None:
    """test_resume_requires_known_running_run_and_matching_prompt: resuming
    an unknown run is refused (RunNotFoundError), and so is going on with a
    run under another task than the one its records were made for
    (DefinitionChangedError, nothing executed); the same task resumes it."""
    ran: list[str] = []

    @durable.step
    def plan(task: str) -> str:
        ran.append("plan")
        return f"plan for {task}"

    @durable.step
    def act(p: str) -> str:
        ran.append("act")
        if ran.count("act") == 1:
            raise TimeoutError("the model timed out")
        return f"{p}: done"

    @durable.workflow(store=store, run_id="known")
    def agent(task: str) -> str:
        return act(plan(task))

    with pytest.raises(durable.RunNotFoundError):
        agent.resume("missing")
    with pytest.raises(TimeoutError):
        agent("original task")
    with pytest.raises(durable.DefinitionChangedError, match="plan: arguments changed"):
        agent("different task")
    with pytest.raises(durable.DefinitionChangedError, match="plan: arguments changed"):
        agent.resume("known", task="different task")
    assert ran == ["plan", "act"]
    run = agent.resume("known")
    assert run.value == "plan for original task: done" and ran == ["plan", "act", "act"]


def test_praisonai_fatal_and_retryable_tool_errors(store: durable.Store, clock: FakeClock) -> None:
    """test_fatal_tool_execution_error_is_recorded_and_terminal,
    test_retryable_tool_execution_error_remains_resumable and
    test_agent_chat_tool_failure_finalizes_run_and_rejects_resume:
    `retry_on=` says which errors are retryable; a fatal one fails the run
    after one try, kept in the history. PraisonAI then refuses to resume;
    a durable run that failed is resumable by design (getting-started.md,
    failures), and `cancel` is what makes it terminal (steering.md)."""
    tries: list[str] = []

    @durable.step(retries=2, retry_delay=1.0, retry_on=(TimeoutError,))
    def tool(name: str) -> str:
        tries.append(name)
        if name == "danger":
            raise PermissionError("halt")
        if tries.count(name) == 1:
            raise TimeoutError("retry later")
        return f"{name} ok"

    @durable.workflow(store=store, run_id=lambda name: f"chat-{name}")
    def chat(name: str) -> str:
        return tool(name)

    assert chat("api") == "api ok" and clock.slept == [1.0]
    with pytest.raises(PermissionError, match="halt"):
        chat("danger")
    assert tries == ["api", "api", "danger"]
    step = chat.history("chat-danger")[1]
    assert step.status == "failed" and [f.type for f in step.failures] == ["PermissionError"]
    assert chat.cancel("chat-danger").status == "cancelled"
    with pytest.raises(durable.Cancelled):
        chat.resume("chat-danger")
    assert chat.recover() == [] and tries == ["api", "api", "danger"]


# -- PraisonAI: tests/unit/checkpoints/test_checkpoints.py ---------------------


def test_praisonai_a_file_each_turn_rewrites(store: durable.Store, tmp_path: Path) -> None:
    """test_service_restore, with the turns of test_service_rewind_one_turn:
    each turn rewrites one file and registers it. While the file is as the
    last turn left it, the completed session called again runs nothing
    (artifacts.md): every turn ran again on every call, the first turn's
    record describing the file as it wrote it. A file edited since runs the
    session from its first writer, which restores it."""
    ran: list[int] = []
    test_file = tmp_path / "test.txt"

    @durable.step
    def turn(i: int) -> int:
        ran.append(i)
        test_file.write_text(f"turn {i}")
        durable.artifact(str(test_file))
        return i

    @durable.workflow(store=store, run_id="session")
    def session(turns: int) -> list[int]:
        return [turn(i) for i in range(1, turns + 1)]

    assert session(3) == [1, 2, 3] and ran == [1, 2, 3]
    assert session.run(3).steps_executed == 0 and ran == [1, 2, 3]
    test_file.write_text("Version 2")
    run = session.run(3)
    assert run.value == [1, 2, 3] and run.steps_executed == 3 and ran == [1, 2, 3] * 2
    assert test_file.read_text() == "turn 3"
    assert session.run(3).steps_executed == 0 and ran == [1, 2, 3] * 2


# -- DBOS: tests/test_queue.py --------------------------------------------------


@pytest.mark.parametrize("how", ["here", "pool", "async"])
def test_dbos_cancelling_queued_work(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """test_cancelling_queued_workflows: work queued by a cancelled
    workflow does not start. A loop_over block keeping its items takes no
    new item once the cancel is seen, as for a graceful stop; the run ends
    `cancelled`. The 5 items after the one in flight all ran."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[int] = []

    def item(i: int) -> int:
        ran.append(i)
        if i == 0:
            assert (aflow if how == "async" else flow).cancel("queued").status == "cancelling"
        return i

    async def aitem(i: int) -> int:
        return item(i)

    @durable.workflow(store=store, run_id="queued")
    def flow() -> list[int]:
        if how == "pool":
            with ThreadPoolExecutor(1) as pool:
                return durable.loop_over(
                    item, range(6), executor=pool, checkpoint_items=True, max_concurrency=1
                )
        return durable.loop_over(item, range(6), checkpoint_items=True)

    @durable.workflow(store=store, run_id="queued")
    async def aflow() -> list[int]:
        return await durable.loop_over(aitem, range(6), checkpoint_items=True, max_concurrency=1)

    with pytest.raises(durable.Cancelled):
        asyncio.run(aflow()) if how == "async" else flow()
    runs = (aflow if how == "async" else flow).runs()
    assert ran == [0] and [r.status for r in runs] == ["cancelled"]


@pytest.mark.parametrize("pause", ["suspend", "wait_for"])
def test_praisonai_a_cancelled_turn_that_then_pauses_ends_cancelled(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, pause: str
) -> None:
    """test_agent_chat_isolates_stop_reason_across_overlapping_turns, the
    cancelled turn ending in a pause for a person: the cancel outranks it,
    as a failure, so nobody is asked about a cancelled run. Looked for once
    a minute here, it is seen at the run's end: the run ended `suspended`."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "60")

    @durable.step
    def draft(topic: str) -> str:
        assert review.cancel("turn").status == "cancelling"
        return f"draft about {topic}"

    @durable.workflow(store=store, run_id="turn")
    def review(topic: str) -> str:
        text = draft(topic)
        if pause == "suspend":
            durable.suspend("waiting for a reviewer")
        return f"{text}: {durable.wait_for('decision')}"

    with pytest.raises(durable.Cancelled):
        review("owls")
    assert [r.status for r in review.runs()] == ["cancelled"]
