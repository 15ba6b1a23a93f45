"""More of the peers' own test cases, ported to durable's API: PraisonAI
(src/praisonai-agents/tests: workflow checkpoint resume, workflow patterns,
nested failure propagation, approvals, guardrails), DBOS Transact
(tests/test_workflow_management.py, test_async.py, test_concurrency.py),
joblib (joblib/test/test_memory.py), Prefect (tests/test_tasks.py caching,
tests/test_cache_policies.py) and LangGraph (time travel, interrupts before
and after a node, several interrupts answered at once, subgraph state).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves; tests/test_peer_ports.py holds the
first ports."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import pytest

import durable

from .clikit import NOTE_HEAD

# -- PraisonAI: tests/test_workflow_checkpoint_resume.py ----------------------


def three_steps(store: durable.Store, ran: list[str], crash: dict[str, str] | None = None) -> Any:
    """The three-step `demo` workflow of PraisonAI's checkpoint tests; the
    step numbered `crash["on"]` raises KeyboardInterrupt (a crash that
    escapes the step's error handling, as a container recycle would). The
    dict is program state: its fingerprint counts it by type, so clearing
    it between the runs is no code change."""
    crash = {} if crash is None else crash

    @durable.step(name="step")
    def step(n: str) -> str:
        if crash.get("on") == n:
            raise KeyboardInterrupt(f"crash on step {n}")
        ran.append(n)
        return f"ran step {n}"

    @durable.workflow(store=store, name="demo", run_id="demo")
    def demo() -> list[str]:
        return [step("1"), step("2"), step("3")]

    return demo


def test_praisonai_resume_runs_only_remaining_steps(store: durable.Store) -> None:
    """TestResumeSkipsCompletedSteps.test_resume_runs_only_remaining_steps: a
    crash on step 3 leaves steps 1-2 recorded; the resume runs step 3 only
    and says it resumed from step index 2."""
    ran: list[str] = []
    crash = {"on": "3"}
    demo = three_steps(store, ran, crash)
    with pytest.raises(KeyboardInterrupt):
        demo()
    assert ran == ["1", "2"]
    assert [i.status for i in demo.runs()] == ["interrupted"]
    crash.clear()
    run = demo.run()
    assert run.value == ["ran step 1", "ran step 2", "ran step 3"]
    assert (run.resumed_from_step, run.steps_replayed, run.steps_executed) == (2, 2, 1)
    assert ran == ["1", "2", "3"]


def test_praisonai_resume_after_edit_refuses_then_rebases(store: durable.Store) -> None:
    """TestDefinitionFingerprint.test_resume_after_edit_refuses_with_mismatch
    and test_rebase_checkpoint_forces_resume_after_edit: a step added to the
    workflow after the crash makes the resume refuse (the message points at
    rebase); rebase=True continues at step 3 against the edited definition,
    without running steps 1-2 again, and runs the new step 4."""
    ran: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        three_steps(store, ran, {"on": "3"})()

    @durable.step(name="step")
    def step(n: str) -> str:
        ran.append(n)
        return f"ran step {n}"

    @durable.workflow(store=store, name="demo", run_id="demo")
    def demo() -> list[str]:
        return [step("1"), step("2"), step("3"), step("4")]

    with pytest.raises(durable.DefinitionChangedError, match="rebase"):
        demo()
    assert ran == ["1", "2"]
    with pytest.warns(UserWarning, match="rebase"):
        run = demo.with_options(rebase=True).run()
    assert run.value == [f"ran step {n}" for n in "1234"]
    assert (run.steps_replayed, run.steps_executed) == (2, 2)
    assert ran == ["1", "2", "3", "4"]


def test_praisonai_resume_of_a_missing_checkpoint_runs_nothing(store: durable.Store) -> None:
    """TestResumeFailsClosedOnMissingCheckpoint: an explicit resume of a run
    that was never saved fails closed (not found) instead of running every
    step from the beginning; so does a fork of it (DBOS
    test_resume_nonexistent_workflow, test_fork_nonexistent_workflow), while
    the resume of a completed run returns its value and runs nothing."""
    ran: list[str] = []
    demo = three_steps(store, ran)
    with pytest.raises(durable.RunNotFoundError, match="does-not-exist"):
        demo.resume("does-not-exist")
    with pytest.raises(durable.RunNotFoundError):
        demo.fork("does-not-exist", at=1)
    assert ran == [] and demo.runs() == []
    demo()
    again = demo.resume("demo")
    assert (again.value[-1], again.steps_executed, ran) == ("ran step 3", 0, ["1", "2", "3"])


def test_praisonai_list_and_delete_checkpoints(store: durable.Store) -> None:
    """TestCheckpointListingAndDelete: a finished run is listed with its
    definition fingerprint; deleting it removes it from the list, and the
    same call then starts afresh."""
    ran: list[str] = []
    demo = three_steps(store, ran)
    demo()
    (info,) = demo.runs()
    assert info.run_id == "demo" and info.fingerprint == demo.fingerprint
    demo.delete("demo")
    assert demo.runs() == []
    demo()
    assert ran == ["1", "2", "3"] * 2


# -- PraisonAI: tests/test_workflow_patterns.py ------------------------------


def test_praisonai_context_passing(store: durable.Store) -> None:
    """TestBasicWorkflow.test_context_passing: step 1 sets a variable that
    step 2 reads, with step 1's output. PraisonAI's steps change a shared
    `ctx.variables` dict; a step that changes its argument cannot be
    replayed (the replay would not redo the change), so after a crash that
    run is refused, with the warning given when the step ran. Returning the
    variables instead resumes: step 1 is replayed, step 2 runs once."""
    ran: list[str] = []
    crash = [True, True]

    @durable.step
    def step1_in_place(variables: dict[str, str]) -> str:
        ran.append("s1")
        variables["greeting"] = "Hello"
        return "Hello"

    @durable.step
    def step1(variables: dict[str, str]) -> tuple[str, dict[str, str]]:
        ran.append("s1")
        return "Hello", {**variables, "greeting": "Hello"}

    @durable.step
    def step2(variables: dict[str, str], prev: str) -> str:
        ran.append("s2")
        return f"{variables.get('greeting', '')} from step2, prev={prev}"

    @durable.workflow(store=store, run_id="in-place")
    def shared_dict() -> str:
        variables: dict[str, str] = {}
        out = step1_in_place(variables)
        if crash and crash.pop():
            raise RuntimeError("crash between the steps")
        return step2(variables, out)

    @durable.workflow(store=store, run_id="returned")
    def returned() -> str:
        out, variables = step1({})
        if crash and crash.pop():
            raise RuntimeError("crash between the steps")
        return step2(variables, out)

    with pytest.warns(UserWarning, match="changed an object it was given"):
        with pytest.raises(RuntimeError):
            shared_dict()
    with pytest.raises(durable.DefinitionChangedError, match="changed an object"):
        shared_dict()
    ran.clear()
    with pytest.raises(RuntimeError):
        returned()
    assert returned() == "Hello from step2, prev=Hello" and ran == ["s1", "s2"]


def test_praisonai_should_run_condition(store: durable.Store) -> None:
    """TestBasicWorkflow.test_should_run_condition: a step that runs only
    when the input says so. The condition is read from a recorded output, so
    a resumed run takes the same branch; each input is its own run."""
    ran: list[str] = []

    @durable.step
    def always(text: str) -> str:
        ran.append("always")
        return text.lower()

    @durable.step
    def conditional(text: str) -> str:
        ran.append("conditional")
        return "Conditional"

    @durable.workflow(store=store)
    def workflow(text: str) -> list[str]:
        seen = always(text)
        return [seen, conditional(seen)] if "special" in seen else [seen]

    assert workflow("normal input") == ["normal input"]
    assert workflow("Special input") == ["special input", "Conditional"]
    assert workflow("Special input") == ["special input", "Conditional"]
    assert ran == ["always", "always", "conditional"]


def test_praisonai_loop_over_a_list(store: durable.Store) -> None:
    """TestLoopPattern.test_loop_over_list, test_loop_with_index,
    test_loop_empty_list: one output per item, in order, with its index; an
    empty list runs nothing. A second call replays the loop's one record."""
    ran: list[str] = []

    @durable.step
    def processor(indexed: tuple[int, str]) -> str:
        index, item = indexed
        ran.append(item)
        return f"[{index}] {item}"

    @durable.workflow(store=store)
    def workflow(items: list[str]) -> list[str]:
        return durable.loop_over(processor, list(enumerate(items)))

    assert workflow(["a", "b", "c"]) == ["[0] a", "[1] b", "[2] c"]
    run = workflow.run(["a", "b", "c"])
    assert (run.value, run.steps_executed) == (["[0] a", "[1] b", "[2] c"], 0)
    assert workflow([]) == []
    assert ran == ["a", "b", "c"]


def test_praisonai_repeat_until_condition_resumes_mid_loop(store: durable.Store) -> None:
    """TestRepeatPattern.test_repeat_until_condition / _max_iterations: a
    generator step repeated until a condition on its output holds, at most
    `max_iterations` times. Crashed in iteration 3, the run resumes there:
    iterations 1-2 are replayed, and the counter ends at 3."""
    counter: list[int] = []
    crash = [True]

    @durable.step
    def generator(i: int) -> dict[str, int]:
        if i == 3 and crash and crash.pop():
            raise KeyboardInterrupt
        counter.append(i)
        return {"count": i}

    @durable.workflow(store=store, run_id="repeat")
    def workflow(max_iterations: int) -> int:
        iterations = 0
        for i in range(1, max_iterations + 1):
            iterations = i
            if generator(i)["count"] >= 3:
                break
        return iterations

    with pytest.raises(KeyboardInterrupt):
        workflow(10)
    run = workflow.run(10)
    assert (run.value, run.steps_replayed, run.steps_executed) == (3, 2, 1)
    assert counter == [1, 2, 3]
    assert workflow.with_options(run_id="cap")(2) == 2 and counter == [1, 2, 3, 1, 2]


def test_praisonai_parallel_then_aggregate(store: durable.Store) -> None:
    """TestParallelPattern.test_parallel_execution, _with_aggregator: three
    tasks at once on a thread pool, then an aggregator over their outputs;
    each ran once, and a re-run replays both records."""
    from concurrent.futures import ThreadPoolExecutor

    ran: list[str] = []
    lock = threading.Lock()

    @durable.step
    def task(name: str) -> str:
        with lock:
            ran.append(name)
        return f"Result {name}"

    @durable.step
    def aggregator(outputs: list[str]) -> str:
        ran.append("agg")
        return f"Combined: {len(outputs)} results"

    @durable.workflow(store=store, run_id="par")
    def workflow() -> str:
        with ThreadPoolExecutor(3) as pool:
            outputs = durable.loop_over(task, ["A", "B", "C"], executor=pool)
        return aggregator(outputs)

    assert workflow() == "Combined: 3 results"
    assert workflow() == "Combined: 3 results"
    assert sorted(ran) == ["A", "B", "C", "agg"]


# -- PraisonAI: tests/unit/workflows/test_nested_failure_propagation.py ------


@pytest.mark.parametrize("wrap", ["none", "loop", "when", "repeat"])
def test_praisonai_a_failing_step_fails_the_run_in_every_pattern(
    store: durable.Store, wrap: str
) -> None:
    """test_a_failing_step_fails_the_run_in_every_pattern and
    test_nested_stop_halts_the_outer_workflow: four steps, the second
    raises; whatever pattern wraps them (a loop over one item, a condition,
    a repeat), the run is failed, no later step runs or is handed the error
    text, and a top-level step after the pattern never runs."""
    calls: list[tuple[str, str]] = []

    def make(name: str, fail: bool = False) -> Any:
        @durable.step(name=name)
        def s(prev: str) -> str:
            calls.append((name, prev))
            if fail:
                raise RuntimeError("boom")
            return f"{name}-out"

        return s

    s1, s2, s3, s4, after = make("s1"), make("s2", True), make("s3"), make("s4"), make("after")

    def chain(item: str) -> str:
        return s4(s3(s2(s1(item))))

    @durable.workflow(store=store, name=f"nested-{wrap}", run_id="r")
    def workflow(go: int) -> str:
        if wrap == "loop":
            out = durable.loop_over(chain, ["only"])[0]
        elif wrap == "when":
            out = chain("only") if go == 1 else ""
        elif wrap == "repeat":
            out = ""
            for _ in range(1):
                out = durable.loop_over(chain, ["only"])[0]
        else:
            out = chain("only")
        return after(out)

    with pytest.raises(RuntimeError, match="boom"):
        workflow(1)
    (info,) = workflow.runs()
    # Before Python 3.11 durable's note on the item ("[durable: item 0 (of 1)
    # of loop_over(...) failed]") is a suffix of the message (`logs.add_note`).
    assert info.status == "failed" and info.error is not None
    assert info.error.partition(" [durable: ")[0] == "RuntimeError: boom", info.error
    assert [c for c, _ in calls] == ["s1", "s2"]
    assert not any("boom" in prev for _, prev in calls)


# -- PraisonAI: guardrails and approvals ------------------------------------


def test_praisonai_guardrail_fails_and_retries(store: durable.Store, clock: Any) -> None:
    """TestGuardrails.test_guardrail_fails_and_retries /
    _max_retries_exceeded: an output the guardrail rejects is tried again;
    one it accepts is kept (and replayed, the guardrail not asked again);
    when every try is rejected the run fails with a ValidationError and
    nothing is recorded."""
    tries: list[int] = []
    asked: list[str] = []

    def guardrail(out: str) -> bool:
        asked.append(out)
        return out == "valid"

    @durable.step(retries=2, retry_delay=0, validate=guardrail)
    def generator(limit: int) -> str:
        tries.append(1)
        return "valid" if len(tries) >= limit else "invalid"

    @durable.workflow(store=store)
    def workflow(limit: int) -> str:
        return generator(limit)

    assert workflow(2) == "valid" and len(tries) == 2
    assert workflow(2) == "valid" and len(tries) == 2 and asked == ["invalid", "valid"]
    tries.clear()
    with pytest.raises(durable.ValidationError):
        workflow.with_options(run_id="never")(99)
    assert len(tries) == 3
    (step,) = [s for s in workflow.history("never") if s.position == 0]
    assert step.status == "failed" and step.attempts == 3


def test_praisonai_approval_denial_blocks_execution(store: durable.Store) -> None:
    """tests/unit/approval/test_approval_denial_blocks_execution.py and the
    gateway's durable approvals (test_exec_approval_durable.py: a pending
    approval survives a restart): a dangerous tool waits for a human
    decision; the pending run is listed with its reason; a denial means the
    tool never runs, an approval runs it once; the work before the wait ran
    once either way."""
    ran: list[str] = []

    @durable.step
    def plan(cmd: str) -> str:
        ran.append("plan")
        return cmd.strip()

    @durable.step
    def shell_exec(cmd: str) -> str:
        ran.append(f"exec {cmd}")
        return "done"

    @durable.workflow(store=store)
    def agent(cmd: str) -> str:
        command = plan(cmd)
        decision = durable.wait_for("approval")
        if decision != "approve":
            return "denied"
        return shell_exec(command)

    for run_id in ("deny", "allow"):
        with pytest.raises(durable.Suspended, match="approval"):
            agent.with_options(run_id=run_id)(" rm -rf /tmp/x ")
    pending = {i.run_id: (i.status, i.reason) for i in agent.runs()}
    assert {k: v[0] for k, v in pending.items()} == {"deny": "suspended", "allow": "suspended"}
    assert all("approval" in (reason or "") for _, reason in pending.values())
    assert agent.resume("deny", inputs={"approval": "deny"}).value == "denied"
    assert agent.resume("allow", inputs={"approval": "approve"}).value == "done"
    assert agent.resume("allow").value == "done"
    assert ran == ["plan", "plan", "exec rm -rf /tmp/x"]


# -- DBOS: tests/test_workflow_management.py ----------------------------------


def blocking_run(wf: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    """Start `wf(*args)` in a thread; its outcome (value or exception) lands
    in the returned list when the thread ends."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(wf(*args))
        except BaseException as e:  # the test inspects it
            out.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


def test_dbos_cancel_stops_before_the_next_step(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cancel_resume: a run cancelled while its body waits between two
    steps stops before the second; the step before ran once. DBOS then
    resumes it to completion; in durable a cancelled run is final (resume
    refuses it with Cancelled, nothing runs), and restart=True runs it
    afresh."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    steps: list[str] = []
    entered, release = threading.Event(), threading.Event()

    @durable.step
    def step_one() -> None:
        steps.append("one")

    @durable.step
    def step_two() -> None:
        steps.append("two")

    @durable.workflow(store=store, run_id="cancel-me")
    def simple_workflow(x: int) -> int:
        step_one()
        entered.set()
        release.wait()
        try:  # a handler like this must not catch the cancellation
            step_two()
        except Exception:
            raise
        return x

    thread, out = blocking_run(simple_workflow, 5)
    assert entered.wait(10)
    assert simple_workflow.cancel("cancel-me").status == "cancelling"
    release.set()
    thread.join()
    assert isinstance(out[0], durable.Cancelled) and steps == ["one"]
    assert [i.status for i in simple_workflow.runs()] == ["cancelled"]
    with pytest.raises(durable.Cancelled):
        simple_workflow.resume("cancel-me")
    assert steps == ["one"]
    release.set()
    assert simple_workflow.with_options(restart=True)(5) == 5
    assert steps == ["one", "one", "two"]


def test_dbos_cancel_after_final_step(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cancel_after_final_step: a run cancelled after its only step,
    before it returns, does not complete: the end of the run is a boundary,
    it ends cancelled and the step ran once."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    steps: list[str] = []
    entered, release = threading.Event(), threading.Event()

    @durable.step
    def step_one() -> None:
        steps.append("one")

    @durable.workflow(store=store, run_id="late")
    def simple_workflow(x: int) -> int:
        step_one()
        entered.set()
        release.wait()
        return x

    thread, out = blocking_run(simple_workflow, 5)
    assert entered.wait(10)
    simple_workflow.cancel("late")
    release.set()
    thread.join()
    assert isinstance(out[0], durable.Cancelled)
    assert [i.status for i in simple_workflow.runs()] == ["cancelled"] and steps == ["one"]


def test_dbos_cancel_a_child_stops_its_parent(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cancel_workflow_children: parent -> child, both blocked. DBOS
    cancels the tree from the parent; in durable a child is cancelled by its
    own run id and its parent stops with it, ending failed (so that once the
    child is removed a resume replays the parent's steps and runs the child
    afresh); the steps after the wait never ran."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[str] = []
    entered, release = threading.Event(), threading.Event()

    @durable.step
    def noop(who: str) -> None:
        ran.append(who)

    @durable.workflow(store=store, run_id="child")
    def child_workflow() -> str:
        noop("child-before")
        entered.set()
        release.wait()
        noop("child-after")
        return "child"

    @durable.workflow(store=store, run_id="parent")
    def parent_workflow() -> str:
        noop("parent-before")
        out = child_workflow()
        noop("parent-after")
        return out

    thread, out = blocking_run(parent_workflow)
    assert entered.wait(10)
    assert child_workflow.cancel("child").status == "cancelling"
    release.set()
    thread.join()
    assert isinstance(out[0], durable.Cancelled) and "child" in str(out[0])
    assert ran == ["parent-before", "child-before"]
    assert [i.status for i in parent_workflow.runs()] == ["failed"]
    assert [i.status for i in child_workflow.runs()] == ["cancelled"]
    child_workflow.delete("child")
    run = parent_workflow.resume("parent")
    assert (run.value, run.steps_replayed) == ("child", 1)
    assert ran == ["parent-before", "child-before", "child-before", "child-after", "parent-after"]


def test_dbos_delete_workflow_leaves_its_child(store: durable.Store) -> None:
    """test_delete_workflow (delete_children=False): deleting a parent run
    leaves its child run; deleting a run that is gone is an error in
    durable (DBOS ignores it). The same call then starts afresh, and so does
    its child: a child made by a removed run is never replayed into the
    parent run made again under its id (docs/identity.md, Child runs)."""
    ran: list[int] = []

    @durable.step
    def txn(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=store)
    def child_workflow(x: int) -> int:
        return txn(x) * 2

    @durable.workflow(store=store, run_id="parent")
    def parent_workflow(x: int) -> int:
        return child_workflow(x)

    assert parent_workflow(5) == 10
    (child,) = child_workflow.runs()
    assert child.parent == f"{parent_workflow.name}/parent@0"
    parent_workflow.delete("parent")
    assert parent_workflow.runs() == [] and [i.run_id for i in child_workflow.runs()] == [
        child.run_id
    ]
    with pytest.raises(durable.RunNotFoundError):
        parent_workflow.delete("parent")
    assert parent_workflow(5) == 10 and ran == [5, 5]


def test_dbos_fork_steps(store: durable.Store) -> None:
    """test_fork_steps: five steps; forks from DBOS step 3, 5 and 1 (1-based:
    durable's at=2, 4, 0) run the steps from there once more each and replay
    the ones before; each fork is a new run and the source is untouched."""
    counts = [0] * 5

    def make(i: int) -> Any:
        @durable.step(name=f"step{i}")
        def s(x: int) -> int:
            counts[i] += 1
            return x + i + 1

        return s

    steps = [make(i) for i in range(5)]

    @durable.workflow(store=store, run_id="src")
    def simple_workflow(x: int) -> int:
        return sum(s(x) for s in steps)

    assert simple_workflow(1) == 20 and counts == [1] * 5
    forks = []
    for at, expected in ((2, [1, 1, 2, 2, 2]), (4, [1, 1, 2, 2, 3]), (0, [2, 2, 3, 3, 4])):
        run = simple_workflow.fork("src", at=at)
        assert run.value == 20 and run.steps_replayed == at and counts == expected
        forks.append(run.run_id)
    assert len(set(forks)) == 3 and "src" not in forks
    assert {i.run_id for i in simple_workflow.runs()} == {"src", *forks}
    assert simple_workflow(1) == 20 and counts == [2, 2, 3, 3, 4]


def test_dbos_fork_around_a_child_workflow(store: durable.Store) -> None:
    """test_restart_fromsteps_childwf: step, child workflow, step. A fork
    from the child's position runs the child again (the fork is another run,
    so its child is another child run); a fork after it replays the child's
    recorded result. A fork made by a step of another workflow is made once:
    that workflow called again with its id replays the fork's id."""
    counts = {"one": 0, "child": 0, "three": 0}

    @durable.step
    def step_one() -> None:
        counts["one"] += 1

    @durable.workflow(store=store)
    def child_workflow(tag: str) -> str:
        counts["child"] += 1
        return tag

    @durable.step
    def step_three() -> None:
        counts["three"] += 1

    @durable.workflow(store=store, run_id="src")
    def simple_workflow() -> str:
        step_one()
        out = child_workflow("c")
        step_three()
        return out

    assert simple_workflow() == "c" and counts == {"one": 1, "child": 1, "three": 1}
    simple_workflow.fork("src", at=1)
    assert counts == {"one": 1, "child": 2, "three": 2}
    simple_workflow.fork("src", at=2)
    assert counts == {"one": 1, "child": 2, "three": 3}

    @durable.step
    def fork_from(step: int) -> str:
        return simple_workflow.fork("src", at=step).run_id

    @durable.workflow(store=store, run_id="forker")
    def fork(step: int) -> str:
        return fork_from(step)

    first = fork(0)
    assert counts == {"one": 2, "child": 3, "three": 4}
    assert fork(0) == first and counts == {"one": 2, "child": 3, "three": 4}


# -- DBOS: tests/test_async.py, tests/test_concurrency.py ---------------------


def test_dbos_async_workflow_and_step(store: durable.Store) -> None:
    """test_async_workflow, test_async_step: an async workflow with a sync
    function run in a thread (the transaction, here a step called through
    asyncio.to_thread, which durable refuses to position: it is a step) and
    an async step; the same id again runs neither the body nor the steps."""
    counts = {"wf": 0, "txn": 0, "step": 0}

    @durable.step
    def test_transaction(var: str) -> str:
        counts["txn"] += 1
        return var + f"txn{counts['txn']}1"

    @durable.step
    async def test_step(var: str) -> str:
        await asyncio.sleep(0)
        counts["step"] += 1
        return var + f"step{counts['step']}"

    @durable.workflow(store=store, run_id="async-wf")
    async def test_workflow(var1: str, var2: str) -> str:
        counts["wf"] += 1
        res1 = test_transaction(var1)
        res2 = await test_step(var2)
        return res1 + res2

    assert asyncio.run(test_workflow("alice", "bob")) == "alicetxn11bobstep1"
    assert asyncio.run(test_workflow("alice", "bob")) == "alicetxn11bobstep1"
    assert counts == {"wf": 1, "txn": 1, "step": 1}
    other = asyncio.run(test_workflow.with_options(run_id="second").run("alice", "bob"))
    assert other.value == "alicetxn21bobstep2"


def test_dbos_async_completed_replay_no_hook_rerun(store: durable.Store) -> None:
    """test_async_completed_replay_no_hook_rerun: a completed async run
    called again returns its recorded result without running the body or
    the user's decorator around it. DBOS returns it also to a call of the
    same id with another argument ("mutated"); durable refuses that call
    (a completed run answers only the same call) and runs nothing."""
    counts = {"hook": 0, "body": 0, "step": 0}

    def app_hook(func: Any) -> Any:
        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts["hook"] += 1
            return await func(*args, **kwargs)

        return wrapper

    @durable.step
    async def test_step(var: str) -> str:
        counts["step"] += 1
        return var + ":step"

    @durable.workflow(store=store, run_id="hooked")
    @app_hook
    async def test_workflow(var: str) -> str:
        counts["body"] += 1
        return await test_step(var)

    assert asyncio.run(test_workflow("direct")) == "direct:step"
    assert asyncio.run(test_workflow("direct")) == "direct:step"
    assert counts == {"hook": 1, "body": 1, "step": 1}
    with pytest.raises(durable.DefinitionChangedError):
        asyncio.run(test_workflow("mutated"))
    assert counts == {"hook": 1, "body": 1, "step": 1}


def test_dbos_child_workflow_async(store: durable.Store) -> None:
    """test_child_workflow_async: async children called directly and as a
    task of the parent; each knows its parent, the direct child's id is the
    parent's id and its position, and a re-run of the parent runs no child."""
    ran: list[str] = []

    @durable.workflow(store=store)
    async def child_workflow(var: str) -> str:
        ran.append(var)
        return var + "_child"

    @durable.workflow(store=store, run_id="parent")
    async def parent_workflow() -> str:
        result = await child_workflow("test")
        task = asyncio.ensure_future(child_workflow("async"))
        return result + await task

    assert asyncio.run(parent_workflow()) == "test_childasync_child"
    assert asyncio.run(parent_workflow()) == "test_childasync_child"
    assert sorted(ran) == ["async", "test"]
    infos = {i.run_id: i.parent for i in child_workflow.runs()}
    assert infos["parent.0"] == f"{parent_workflow.name}/parent@0"
    assert len(infos) == 2 and all(p and p.startswith(f"{parent_workflow.name}/parent@") for p in infos.values())
    assert [i.parent for i in parent_workflow.runs()] == [None]


def test_dbos_asyncio_wait_timeout_then_fork(store: durable.Store) -> None:
    """test_asyncio_wait_timeout: two steps blocked on a gate; a wait with a
    timeout returns both pending, the gate opens, a second wait collects
    them. Each step ran once; a fork past them (DBOS: from step 100)
    replays both and runs nothing. DBOS records the wait itself; durable
    records the steps only, so in the fork the replayed steps are done at
    once and the timed wait finds both done: the body must not assert on
    what a timeout saw (a step's recorded output is what replays)."""
    counter: list[str] = []

    @durable.step
    async def blocked_step(val: str) -> str:
        counter.append(val)
        await gate().wait()
        return val

    gates: list[asyncio.Event] = []
    waits: list[tuple[int, int]] = []

    def gate() -> asyncio.Event:
        if not gates:
            gates.append(asyncio.Event())
        return gates[0]

    @durable.workflow(store=store, run_id="timeout")
    async def wait_timeout_workflow() -> list[str]:
        tasks = [asyncio.ensure_future(blocked_step(v)) for v in "ab"]
        done, pending = await asyncio.wait(tasks, timeout=0.05)
        waits.append((len(done), len(pending)))
        gate().set()
        done, _ = await asyncio.wait(tasks)
        return sorted(t.result() for t in done)

    assert asyncio.run(wait_timeout_workflow()) == ["a", "b"]
    gates.clear()
    forked = asyncio.run(wait_timeout_workflow.fork("timeout", at=2))
    assert (forked.value, forked.steps_replayed, forked.steps_executed) == (["a", "b"], 2, 0)
    assert sorted(counter) == ["a", "b"] and waits == [(0, 2), (2, 0)]


def test_dbos_gather_many_steps_in_order(store: durable.Store) -> None:
    """test_gather_manysteps, test_gather_distinct_steps_deterministic_order:
    100 steps gathered at once, each finishing in another order; every one
    ran once, the results come back in call order, each position holds the
    step created there, and a fork past them all replays all 100."""
    ran: list[int] = []

    @durable.step
    async def step(i: int) -> int:
        for _ in range(i % 7):
            await asyncio.sleep(0)
        ran.append(i)
        return i * i

    @durable.workflow(store=store, run_id="many")
    async def gather_workflow(n: int) -> list[int]:
        return list(await asyncio.gather(*(step(i) for i in range(n))))

    assert asyncio.run(gather_workflow(100)) == [i * i for i in range(100)]
    assert sorted(ran) == list(range(100)) and ran != list(range(100))
    positions = [s for s in gather_workflow.history("many") if s.position >= 0]
    assert [s.value for s in positions] == [i * i for i in range(100)]
    forked = asyncio.run(gather_workflow.fork("many", at=100))
    assert (forked.steps_replayed, forked.steps_executed, len(ran)) == (100, 0, 100)


ASYNC_RECOVERY = NOTE_HEAD + """

@durable.step
async def test_step(var2: str) -> str:
    note("step")
    return var2

@durable.workflow
async def test_workflow(var: str, var2: str) -> str:
    note("wf")
    output = await test_step(var2)
    assert output == var2
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return var

async def main():
    if os.environ.get("CRASH"):
        await test_workflow.with_options(run_id="wf-async")("value", "value")
    for run in await test_workflow.recover():
        print(run.run_id, run.status, run.value, run.steps_replayed, run.steps_executed)
    print("again", len(await test_workflow.recover()))

asyncio.run(main())
"""


@pytest.mark.slow
def test_dbos_workflow_recovery_async_after_kill_9(
    tmp_path: Any, child_env: dict[str, str]
) -> None:
    """test_workflow_recovery_async with a real crash: an async workflow
    killed with SIGKILL after its step is found by recovery in the next
    process (DBOS marks it PENDING by hand), which runs the body again and
    replays the step; a second recovery finds nothing."""
    import subprocess
    import sys

    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(ASYNC_RECOVERY)
    crashed = subprocess.run(
        [sys.executable, str(script), str(log)],
        env=dict(child_env, CRASH="1"),
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == -9, crashed.stderr
    done = subprocess.run(
        [sys.executable, str(script), str(log)], env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["wf-async completed value 1 0", "again 0"]
    assert log.read_text().split() == ["wf", "step", "wf"]


# -- joblib: joblib/test/test_memory.py ---------------------------------------


def cache_cli(store: durable.Store, *argv: str) -> None:
    """`durable cache ...` on the store, in this process."""
    from durable._cli.main import main

    assert main(["cache", *argv, "--store", str(store.url)]) == 0


def test_joblib_check_call_in_cache_and_clear(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_check_call_in_cache, test_call_and_shelve, test_memory_clear: no
    entry before the first call, one after it (read back without running);
    `durable cache clear STEP` removes that step's entries only, and the
    next call computes again."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def f(x: int) -> int:
        ran.append("f")
        return x + 3

    @durable.step(cache=True)
    def other(x: int) -> int:
        ran.append("other")
        return -x

    assert durable.cache_info(f).entries == 0
    assert f(2) == 5 and other(2) == -2
    assert durable.cache_info(f).entries == 1 and f(2) == 5
    cache_cli(local_store, "clear", f.name)
    assert durable.cache_info(f).entries == 0 and durable.cache_info(other).entries == 1
    assert f(2) == 5 and other(2) == -2
    assert ran == ["f", "other", "f"]


def test_joblib_func_dir_and_a_removed_output(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """test_func_dir: entries are kept under the function's name, which
    `durable cache ls` shows (joblib's folder is module/qualname; durable's
    step name is the qualified name without `<locals>`, its identity keeps
    the module), and a removed output file is a miss, not an error: the
    call computes again and stores it again."""
    import json

    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=True)
    def f(x: int) -> int:
        ran.append(x)
        return x + 3

    assert f(1) == 4
    assert f.name == "test_joblib_func_dir_and_a_removed_output.f"
    capsys.readouterr()
    cache_cli(local_store, "ls", "--json")
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["step"] == f.name
    root = local_store_root(local_store)
    files = [p for p in (root / "cache").rglob("*") if p.is_file() and "used" not in p.parts]
    assert files
    for p in files:
        p.unlink()
    assert f(1) == 4 and f(1) == 4 and ran == [1, 1]


def local_store_root(store: durable.Store) -> Any:
    from pathlib import Path

    return Path(str(store.url).removeprefix("file://"))


def test_joblib_recomputes_after_a_damaged_entry(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_memory_recomputes_after_an_error_while_loading_results: an entry
    damaged on disk is never loaded: the call computes again (a fresh
    value, not the damaged one) and later calls hit the new entry. (The
    calls are counted in a file: a counter the step read would be captured
    state, part of its key.)"""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    log = local_store_root(local_store).parent / "calls"

    @durable.step(cache=True)
    def func(arg: str) -> tuple[str, int]:
        with open(log, "a") as f:
            f.write("call\n")
        return arg, len(log.read_text().split()) - 1

    assert func("arg") == ("arg", 0) and func("arg") == ("arg", 0)
    root = local_store_root(local_store)
    (entry,) = [p for p in (root / "cache").rglob("*") if p.is_file() and "used" not in p.parts]
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    assert func("arg") == ("arg", 1) and func("arg") == ("arg", 1)


def test_joblib_memory_partial(local_store: durable.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_memory_partial (check_identity_lazy over functools.partial(func,
    1)): a cached partial runs once per distinct call; a partial binding
    other arguments, or a bound list that changed since, is another key."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    accumulator: list[Any] = []

    def func(x: Any, y: int) -> Any:
        accumulator.append(x)
        return y

    function = durable.step(cache=True)(functools.partial(func, 1))
    for i in range(3):
        for _ in range(2):
            assert function(i) == i and function(y=i) == i
    assert accumulator == [1, 1, 1]
    assert durable.step(cache=True)(functools.partial(func, 2))(0) == 0
    weights = [1]
    bound = durable.step(cache=True)(functools.partial(func, weights))
    assert bound(0) == 0
    weights.append(2)
    assert bound(0) == 0
    assert accumulator == [1, 1, 1, 2, [1, 2], [1, 2]]


def test_joblib_cache_of_a_bound_method(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory(...).cache(obj.method) (joblib hashes a bound method's
    instance with the arguments): the instance's state is part of the key,
    so an instance that changed, or another instance, computes again; the
    same state hits."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[tuple[int, int]] = []

    class Model:
        def __init__(self, b: int) -> None:
            self.b = b

        def add(self, x: int) -> int:
            ran.append((self.b, x))
            return self.b + x

    k = Model(1)
    cached = durable.step(cache=True)(k.add)
    assert cached(1) == 2 and cached(1) == 2
    k.b = 100
    assert cached(1) == 101
    assert durable.step(cache=True)(Model(7).add)(1) == 8
    k.b = 1
    assert cached(1) == 2
    assert ran == [(1, 1), (100, 1), (7, 1)]


def test_joblib_cache_of_a_builtin_method_and_a_callable_object(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory(...).cache(config.get) and of a callable object (a model whose
    __call__ predicts): neither has Python source, so durable needs
    version=; the version names the code, not the data, so the dict's or
    the object's state is part of the key, as a bound method's instance is:
    after it changed the call computes again, never the old output."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    class Model:
        def __init__(self, w: int) -> None:
            self.w = w

        def __call__(self, x: int) -> int:
            ran.append(f"model {self.w}")
            return self.w * x

    config = {"a": 1}
    get = durable.step(cache=True, version="1", name="get")(config.get)
    assert get("a") == 1
    config["a"] = 2
    assert get("a") == 2
    model = Model(3)
    predict = durable.step(cache=True, version="1", name="predict")(model)
    assert predict(2) == 6 and predict(2) == 6
    model.w = 10
    assert predict(2) == 20
    assert ran == ["model 3", "model 10"]
    assert durable.step(cache=True, version="1", name="len")(len)("abc") == 3


def test_joblib_class_based_decorator_is_code_not_data(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """test_memory_ignore_decorated with a class-based decorator (an object
    made with functools.update_wrapper, counting its calls and holding a
    lock): the function it wraps is what runs and is fingerprinted, so the
    decorator object is no argument: its call counter changing, or its lock,
    neither refuses the resume of a run nor keeps a call out of the cache."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "cache-store"))
    ran: list[str] = []

    class counted:  # named as the decorator it is used as
        def __init__(self, fn: Any) -> None:
            functools.update_wrapper(self, fn)
            self.calls = 0
            self.lock = threading.Lock()

        def __call__(self, *args: Any) -> Any:
            self.calls += 1
            return self.__wrapped__(*args)  # type: ignore[attr-defined]

    @durable.step
    @counted
    def f(x: int) -> int:
        ran.append("f")
        return x + 1

    @durable.step(cache=True)
    @counted
    def g(x: int) -> int:
        ran.append("g")
        return x * 2

    crash = [True]

    @durable.workflow(store=store, run_id="decorated")
    def wf(x: int) -> int:
        a = f(x)
        if crash and crash.pop():
            raise RuntimeError("crash after the step")
        return a

    with pytest.raises(RuntimeError):
        wf(1)
    run = wf.run(1)
    assert (run.value, run.steps_replayed, run.steps_executed) == (2, 1, 0)
    assert (g(2), g(2)) == (4, 4) and ran == ["f", "g"]


def test_joblib_cached_bound_method_that_changes_its_instance(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory(...).cache(obj.method) of a method that changes its instance
    (joblib's test_argument_change, with the change made to `self`): a hit
    could return the output but not redo the change, so the output is not
    cached, with a warning, as for a method step's `self` or an argument
    changed in place; another instance in the same state computes (and
    changes) for itself."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))

    class Acc:
        def __init__(self) -> None:
            self.items: list[int] = []

        def add(self, x: int) -> int:
            self.items.append(x)
            return len(self.items)

    a, b = Acc(), Acc()
    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert durable.step(cache=True)(a.add)(1) == 1
    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert durable.step(cache=True)(b.add)(1) == 1
    assert (a.items, b.items) == ([1], [1])


def test_joblib_bound_method_step_in_a_run(store: durable.Store) -> None:
    """The same in a run: a step made of a bound method (durable.step(k.add))
    counts its instance as an argument, as a method step's `self` does and
    as `loop_over(obj.method, ...)` does: a resume after the instance
    changed is refused (the refusal shows the instance with the call's
    arguments, as for a method step), never served the old output; so is a loop over
    that step (its block counts the instance as loop_over(k.add) does). An
    instance without a digest (it holds a lock) fails closed, and the
    refusal names it (as argument 1, a method step's `self`) rather than
    the call's own arguments, which have one."""
    ran: list[int] = []
    crash = [True]

    class Model:
        def __init__(self, b: int) -> None:
            self.b = b

        def add(self, x: int) -> int:
            ran.append(self.b)
            return self.b + x

    k = Model(1)
    step = durable.step(k.add)

    @durable.workflow(store=store, run_id="bound")
    def wf(x: int) -> int:
        v = step(x)
        if crash and crash.pop():
            raise RuntimeError("crash after the step")
        return v

    with pytest.raises(RuntimeError):
        wf(1)
    k.b = 100
    with pytest.raises(durable.DefinitionChangedError, match=r"called now as \S*add\(<.* object at"):
        wf(1)
    assert wf.with_options(on_change="rerun")(1) == 101 and ran == [1, 100]

    crash.append(True)

    @durable.workflow(store=store, run_id="bound-loop")
    def loop(xs: list[int]) -> list[int]:
        v = durable.loop_over(step, xs)
        if crash and crash.pop():
            raise RuntimeError("crash after the loop")
        return v

    with pytest.raises(RuntimeError):
        loop([1, 2])
    k.b = 1
    with pytest.raises(durable.DefinitionChangedError, match="loop_over"):
        loop([1, 2])
    assert ran == [1, 100, 100, 100]

    k.lock = threading.Lock()  # type: ignore[attr-defined]
    crash.append(True)
    with pytest.raises(RuntimeError):
        wf.with_options(run_id="locked")(1)
    with pytest.raises(durable.DefinitionChangedError, match=r"argument 1 of \S*add \(<.* object"):
        wf.with_options(run_id="locked")(1)


# -- Prefect: tests/test_tasks.py TestTaskCaching, tests/test_cache_policies.py


def test_prefect_repeated_task_call_within_flow_is_cached(store: durable.Store) -> None:
    """test_repeated_task_call_within_flow_is_cached_by_default,
    test_many_repeated_cache_hits_within_flows_cached: a cached task called
    again in the same run is served its first output; every call still
    takes its own position (a hit is recorded), so a resume replays all of
    them."""
    ran: list[int] = []

    @durable.step(cache=True)
    def foo(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=store, run_id="bar")
    def bar() -> list[int]:
        return [foo(1) for _ in range(6)]

    assert bar() == [1] * 6 and ran == [1]
    steps = [s for s in bar.history("bar") if s.position >= 0]
    assert [s.value for s in steps] == [1] * 6
    forked = bar.fork("bar", at=6)
    assert (forked.steps_replayed, forked.steps_executed, ran) == (6, 0, [1])


def test_prefect_cache_key_fn_shares_one_entry(store: durable.Store) -> None:
    """test_cache_hits_within_flows_are_cached, test_cache_hits_between_flows
    _are_cached (cache_key_fn=lambda *_: "cache_hit-1"): a key function that
    ignores the arguments puts every call under one entry, as asked: foo(2)
    is served foo(1)'s output, within a run and in another run."""
    ran: list[int] = []

    @durable.step(cache=durable.Cache(key=lambda x: "cache_hit-1"))
    def foo(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=store)
    def bar(x: int) -> list[int]:
        return [foo(1), foo(x)]

    assert bar(2) == [1, 1] and bar(3) == [1, 1] and ran == [1]


def test_prefect_cache_misses_arent_cached(store: durable.Store) -> None:
    """test_cache_misses_arent_cached: a key function that never returns the
    same key twice (its default list is a tally) makes every call a miss."""
    ran: list[int] = []

    def mutating_key(x: int, tally: list[str] = []) -> str:  # noqa: B006 - the tally is the point
        tally.append("x")
        return "call tally:" + "".join(tally)

    @durable.step(cache=durable.Cache(key=mutating_key))
    def foo(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=store)
    def bar() -> tuple[int, int]:
        return foo(1), foo(1)

    assert bar() == (1, 1) and ran == [1, 1]


def test_prefect_cache_key_fn_receives_context(store: durable.Store) -> None:
    """test_cache_key_fn_receives_context (key: the flow run id): within one
    run the second call is served the first one's output; another run
    computes again."""
    ran: list[str] = []

    def run_key(x: str) -> str:
        run = durable.current_run()
        assert run is not None
        return run.run_id

    @durable.step(cache=durable.Cache(key=run_key))
    def foo(x: str) -> str:
        ran.append(x)
        return x

    @durable.workflow(store=store)
    def bar() -> tuple[str, str]:
        return foo("something"), foo("different")

    assert bar.with_options(run_id="one")() == ("something", "something")
    assert bar.with_options(run_id="two")() == ("something", "something")
    assert ran == ["something", "something"]


def test_prefect_refresh_cache_by_clearing(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cache_misses_w_refresh_cache, test_cache_hits_wo_refresh_cache:
    durable has no refresh_cache option; `durable cache clear STEP` is the
    refresh: the next call computes and stores anew, and the call after it
    is served the new output. (Calls are counted in a file: a list the step
    read would be captured state, part of its key.)"""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    log = local_store_root(local_store).parent / "calls"

    @durable.step(cache=durable.Cache(key=lambda: "k"))
    def foo() -> int:
        with open(log, "a") as f:
            f.write("call\n")
        return len(log.read_text().split())

    assert foo() == 1 and foo() == 1
    cache_cli(local_store, "clear", foo.name)
    assert foo() == 2 and foo() == 2


def test_prefect_key_fn_and_ignore_are_refused() -> None:
    """test_cache_key_fn_takes_precedence_over_cache_policy: Prefect warns
    and lets cache_key_fn win over the INPUTS policy; durable refuses a
    Cache with both key= and ignore= (ignore would have no effect), and
    cache= with persist=False (test_false_persist_results_sets_cache_policy
    _to_none: Prefect drops the cache with a warning)."""
    with pytest.raises(durable.ConfigurationError, match="ignore"):
        durable.Cache(key=lambda x: "k", ignore=("x",))
    with pytest.raises(durable.ConfigurationError, match="persist=False"):

        @durable.step(cache=True, persist=False)
        def foo(x: int) -> int:
            return x


def test_prefect_unhashable_inputs_are_never_served(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """TestInputsPolicy with inputs that cannot be hashed (Prefect raises,
    or its hash_objects falls back to cloudpickle): a lock, or an object
    holding one, has no reproducible digest, so the call is neither served
    nor stored: it computes every time. In a run such a call is a changed
    call on resume: refused, never replayed."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    class Holder:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.n = 1

    @durable.step(cache=True)
    def foo(x: Any) -> int:
        ran.append(type(x).__name__)
        return 1

    lock = threading.Lock()
    holder = Holder()
    for _ in range(2):
        assert foo(lock) == 1 and foo(holder) == 1
    assert len(ran) == 4 and durable.cache_info(foo).entries == 0

    @durable.step
    def bar(x: Any) -> int:
        ran.append("bar")
        return 2

    crash = [True]

    @durable.workflow(store=local_store, run_id="locked")
    def flow() -> int:
        v = bar(lock)
        if crash and crash.pop():
            raise RuntimeError("crash after the step")
        return v

    with pytest.raises(RuntimeError):
        flow()
    with pytest.raises(durable.DefinitionChangedError):
        flow()
    assert flow.with_options(on_change="rerun")() == 2 and ran[4:] == ["bar", "bar"]


def test_prefect_nested_cache_key_fn(store: durable.Store) -> None:
    """test_nested_cache_key_fn, test_nested_async_cache_key_fn: a cached
    outer task calling a plain inner task: the second outer call is a hit,
    so the inner task ran once; the inner call took no position."""
    ran: list[str] = []

    @durable.step
    def inner_task(x: int) -> int:
        ran.append("inner")
        return x * 2

    @durable.step(cache=True)
    def outer_task(x: int) -> int:
        ran.append("outer")
        return inner_task(x)

    @durable.step
    async def inner_async(x: int) -> int:
        ran.append("inner async")
        return x * 2

    @durable.step(cache=True)
    async def outer_async(x: int) -> int:
        return await inner_async(x)

    @durable.workflow(store=store, run_id="nested")
    def my_flow() -> tuple[int, int]:
        return outer_task(2), outer_task(2)

    @durable.workflow(store=store, run_id="nested-async")
    async def my_async_flow() -> tuple[int, int]:
        return await outer_async(3), await outer_async(3)

    assert my_flow() == (4, 4) and ran == ["outer", "inner"]
    assert [s.name for s in my_flow.history("nested") if s.position >= 0] == [outer_task.name] * 2
    assert asyncio.run(my_async_flow()) == (6, 6) and ran[2:] == ["inner async"]


def test_joblib_interactive_function_in_two_sessions(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_parallel_call_cached_function_defined_in_jupyter: a function
    defined in a notebook cell (module `__main__`, its source registered in
    linecache under the cell's name, as IPython does) and cached; calls on a
    thread pool inside a run do not drop its entries, and in a second
    session (another cell name for the same source) the entries are still
    hit: the cell's file name never enters the key."""
    import linecache
    import textwrap
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    source = textwrap.dedent(
        """
        def f(x):
            RAN.append(x)
            return x
        """
    )
    ran: list[int] = []
    for session_no in (0, 1):
        cell = f"<ipython-input-{session_no}-000000000000>"
        linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
        namespace: dict[str, Any] = {"__name__": "__main__", "RAN": ran}
        exec(compile(source, cell, "exec"), namespace)
        f = namespace["f"]
        assert f.__code__.co_filename == cell
        cached_f = durable.step(cache=True)(f)

        @durable.workflow(store=local_store, run_id=f"session-{session_no}")
        def wf(step: Any = cached_f) -> list[int]:
            with ThreadPoolExecutor(2) as pool:
                return durable.loop_over(step, [1, 2], executor=pool)

        if session_no == 0:
            assert cached_f(3) == 3
        assert wf() == [1, 2] and cached_f(3) == 3
        assert durable.cache_info(cached_f).entries == 3
        del linecache.cache[cell]
    assert sorted(ran) == [1, 2, 3]


def test_joblib_file_modification(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """test_memory_file_modification: a module edited around a cached
    function, then reloaded, keeps the function's entries (its position in
    the file is no part of the key); an edit of the function itself
    computes once after the reload, and is then served. Before the reload
    both keep serving the running code's entry: the edit changed no code
    that runs (a run's start would refuse the edit)."""
    import importlib
    import sys

    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "tmp_durable_mod_.py"
    content = "OUT = []\n\ndef f(x):\n    OUT.append(str(x))\n    return x\n"

    def load(source: str) -> Any:
        module.write_text(source)
        sys.modules.pop("tmp_durable_mod_", None)
        return importlib.import_module("tmp_durable_mod_")

    try:
        tmp = load(content)
        f = durable.step(cache=True)(tmp.f)
        f(1), f(2), f(1)
        assert tmp.OUT == ["1", "2"]
        module.write_text("\n\n" + content)
        assert f(1) == 1
        assert tmp.OUT == ["1", "2"]  # served: the code that runs is unchanged
        tmp = load("\n\n" + content)
        f = durable.step(cache=True)(tmp.f)
        f(1), f(2)
        assert tmp.OUT == []
        edited = content.replace("str(x)", "'x=%s' % x")
        module.write_text(edited)
        f(1)
        assert tmp.OUT == []  # not reloaded: still the code of the entry
        tmp = load(edited)
        f = durable.step(cache=True)(tmp.f)
        f(1), f(1)
        assert tmp.OUT == ["x=1"]
    finally:
        sys.modules.pop("tmp_durable_mod_", None)


def test_joblib_name_collision_and_eval(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_memory_name_collision, test_memory_warning_collision_detection,
    test_memory_eval: two functions of one name in one scope with other
    bodies never share an entry (joblib warns of a collision); a function
    made by eval has no source, so caching it needs version= (joblib
    caches it and warns that it cannot detect collisions)."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))

    @durable.step(cache=True)
    def name_collision(x: int) -> int:
        """A first function called name_collision"""
        return x

    a = name_collision

    @durable.step(cache=True)  # type: ignore[no-redef]
    def name_collision(x: int) -> int:
        """A second function called name_collision"""
        return x + 1

    b = name_collision
    assert (a(1), b(1), a(1), b(1)) == (1, 2, 1, 2)
    with pytest.raises(durable.ConfigurationError, match="version="):
        durable.step(cache=True)(eval("lambda x: x"))
    a1 = durable.step(cache=True, version="1", name="a1")(eval("lambda x: x"))
    b1 = durable.step(cache=True, version="1", name="b1")(eval("lambda x: x+1"))
    assert (a1(1), b1(1), a1(0)) == (1, 2, 0)


# -- LangGraph: libs/langgraph/tests/test_pregel.py --------------------------


def test_langgraph_time_travel_replays_to_a_checkpoint(store: durable.Store) -> None:
    """Time travel (get_state_history, then invoke from a past checkpoint,
    test_fork_and_update_task_results without an update): every checkpoint
    of a finished thread can be read back; a run from the checkpoint after
    node b replays a and b and runs c again; the source thread's history is
    unchanged."""
    ran: list[str] = []

    def node(name: str) -> Any:
        @durable.step(name=name)
        def n(state: list[str]) -> list[str]:
            ran.append(name)
            return [*state, name]

        return n

    a, b, c = node("a"), node("b"), node("c")

    @durable.workflow(store=store, run_id="thread")
    def graph(start: list[str]) -> list[str]:
        return c(b(a(start)))

    assert graph([]) == ["a", "b", "c"]
    states = [durable.load(graph, "thread", p, store=store) for p in (-1, 0, 1, 2)]
    assert states[1:] == [["a"], ["a", "b"], ["a", "b", "c"]]
    replay = graph.fork("thread", at=2, new_run_id="replay")
    assert (replay.value, replay.steps_replayed, replay.steps_executed) == (["a", "b", "c"], 2, 1)
    assert ran == ["a", "b", "c", "c"]
    assert [s.value for s in graph.history("thread") if s.position >= 0] == states[1:]


def test_langgraph_interrupt_before_and_after_a_node(store: durable.Store) -> None:
    """interrupt_before / interrupt_after (test_invoke_checkpoint_two's
    graph compiled with interrupts): the run stops before a node (a wait
    right before its call) and after it (a wait right after); each resume
    continues from there, and no node runs twice."""
    ran: list[str] = []

    @durable.step
    def tool(x: int) -> int:
        ran.append("tool")
        return x + 1

    @durable.step
    def agent(x: int) -> int:
        ran.append("agent")
        return x * 10

    @durable.workflow(store=store, run_id="hitl")
    def graph(x: int) -> int:
        y = agent(x)
        durable.wait_for("before tool")
        z = tool(y)
        durable.wait_for("after tool")
        return z

    with pytest.raises(durable.Suspended, match="before tool"):
        graph(1)
    assert ran == ["agent"]
    with pytest.raises(durable.Suspended, match="after tool"):
        graph.resume("hitl", inputs={"before tool": None})
    assert ran == ["agent", "tool"]
    run = graph.resume("hitl", inputs={"after tool": None})
    assert (run.value, run.steps_executed, ran) == (11, 1, ["agent", "tool"])


def test_langgraph_interrupt_loop(store: durable.Store) -> None:
    """test_interrupt_loop: a node asks again while the answer is invalid
    ("13", "15"), each resume answering one interrupt of the same name,
    until "19"; the work before the loop ran once."""
    ran: list[str] = []

    @durable.step
    def intro() -> str:
        ran.append("intro")
        return "How old are you?"

    @durable.workflow(store=store, run_id="age")
    def ask_age() -> dict[str, int]:
        question = intro()
        for _ in range(10):
            value = str(durable.wait_for("age"))
            if value.isdigit() and int(value) >= 18:
                return {"age": int(value)}
            question = "invalid response"
        raise RuntimeError(question)

    with pytest.raises(durable.Suspended, match="age"):
        ask_age()
    for answer in ("13", "15"):
        with pytest.raises(durable.Suspended, match="age"):
            ask_age.resume("age", inputs={"age": answer})
    assert ask_age.resume("age", inputs={"age": "19"}).value == {"age": 19}
    assert ran == ["intro"]


def test_langgraph_double_interrupt_subgraph(store: durable.Store) -> None:
    """test_double_interrupt_subgraph: a subgraph with two interrupts, run
    on its own and inside a parent; each resume of the parent answers the
    next interrupt in the child; the parent's node before the subgraph ran
    once and the child's first node once."""
    ran: list[str] = []

    @durable.step
    def prepare(text: str) -> str:
        ran.append("prepare")
        return text

    @durable.step
    def node(name: str, value: Any) -> Any:
        ran.append(name)
        return value

    @durable.workflow(store=store)
    def subgraph(text: str) -> Any:
        first = node("node_1", durable.wait_for("interrupt node 1"))
        return node("node_2", durable.wait_for("interrupt node 2") or first)

    @durable.workflow(store=store, run_id="parent")
    def parent_agent(text: str) -> Any:
        return subgraph(prepare(text))

    with pytest.raises(durable.Suspended, match="node 1"):
        subgraph.with_options(run_id="alone")("test")
    with pytest.raises(durable.Suspended, match="node 2"):
        subgraph.resume("alone", inputs={"interrupt node 1": "123"})
    assert subgraph.resume("alone", inputs={"interrupt node 2": "123"}).value == "123"
    assert ran == ["node_1", "node_2"]
    ran.clear()
    with pytest.raises(durable.Suspended, match="node 1"):
        parent_agent("test")
    with pytest.raises(durable.Suspended, match="node 2"):
        parent_agent.resume("parent", inputs={"interrupt node 1": True})
    assert parent_agent.resume("parent", inputs={"interrupt node 2": True}).value is True
    assert ran == ["prepare", "node_1", "node_2"]


def test_langgraph_entrypoint_refuses_a_generator() -> None:
    """test_entrypoint_from_sync_generator: a generator is refused when it
    is decorated (LangGraph: NotImplementedError), as a workflow and as a
    step."""
    with pytest.raises(durable.ConfigurationError):

        @durable.workflow
        def foo(inputs: Any) -> Any:
            yield "a"

    with pytest.raises(durable.ConfigurationError):

        @durable.step
        def bar(inputs: Any) -> Any:
            yield "b"


# -- DBOS: more of tests/test_workflow_management.py and tests/test_async.py --


def test_dbos_fork_from_failure(store: durable.Store) -> None:
    """test_fork_from_failure (from_last_failure): three runs, the first
    failing at step 2, the second at step 3, the third completing; each is
    forked from its first unfinished position (`RunInfo.position`; the last
    step for the completed one). Step one is replayed by every fork, step
    two runs again for the first fork only, step three for all three."""
    counts = {"one": 0, "two": 0, "three": 0}

    @durable.step
    def step_one() -> int:
        counts["one"] += 1
        return 1

    @durable.step
    def step_two() -> int:
        counts["two"] += 1
        if counts["two"] == 1:
            raise RuntimeError("step two failed")
        return 2

    @durable.step
    def step_three() -> int:
        counts["three"] += 1
        if counts["three"] == 1:
            raise RuntimeError("step three failed")
        return 3

    @durable.workflow(store=store)
    def three_step_workflow() -> int:
        return step_one() + step_two() + step_three()

    for run_id, error in (("wf1", "step two"), ("wf2", "step three")):
        with pytest.raises(RuntimeError, match=error):
            three_step_workflow.with_options(run_id=run_id)()
    assert three_step_workflow.with_options(run_id="wf3")() == 6
    assert counts == {"one": 3, "two": 3, "three": 2}
    infos = {i.run_id: i for i in three_step_workflow.runs()}
    assert [infos[r].position for r in ("wf1", "wf2", "wf3")] == [1, 2, None]
    for run_id in ("wf1", "wf2", "wf3"):
        at = infos[run_id].position
        assert three_step_workflow.fork(run_id, at=2 if at is None else at).value == 6
    assert counts == {"one": 3, "two": 4, "three": 5}


def test_dbos_workflow_with_task_cancellation(store: durable.Store) -> None:
    """test_workflow_with_task_cancellation: the asyncio task running a
    workflow is cancelled while a step is in flight. DBOS finishes the
    workflow in the background; in durable the run is the caller's task,
    so it stops as interrupted (not failed) with the finished step kept,
    and the next call replays that step and completes."""
    ran: list[str] = []

    @durable.step
    async def before() -> int:
        ran.append("before")
        return 1

    @durable.step
    async def blocked() -> str:
        ran.append("blocked")
        started.set()
        await gate.wait()
        return "completed"

    @durable.workflow(store=store, run_id="cancel-task")
    async def test_workflow() -> str:
        await before()
        return await blocked()

    async def main() -> Any:
        task = asyncio.create_task(test_workflow())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [(i.status, i.position) for i in test_workflow.runs()] == [("interrupted", 1)]
        gate.set()
        return await test_workflow.run()

    started, gate = asyncio.Event(), asyncio.Event()
    run = asyncio.run(main())
    assert (run.value, run.steps_replayed, run.steps_executed) == ("completed", 1, 1)
    assert ran == ["before", "blocked", "blocked"]


def test_dbos_garbage_collection(store: durable.Store) -> None:
    """test_garbage_collection: of ten completed runs gc keeps the newest
    (keep_last), never a run that did not complete (DBOS keeps pending
    ones); a collected run called again starts afresh, a kept one replays."""
    ran: list[int] = []

    @durable.step
    def work(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=store)
    def wf(i: int) -> int:
        out = work(i)
        if i < 0:
            durable.suspend("waiting")
        return out

    for i in range(10):
        wf.with_options(run_id=f"r{i}")(i)
    with pytest.raises(durable.Suspended):
        wf.with_options(run_id="pending")(-1)
    gone = durable.gc(store, keep_last=3, workflow=wf.name)
    assert len(gone) == 7
    assert sorted(i.run_id for i in wf.runs()) == ["pending", "r7", "r8", "r9"]
    assert wf.with_options(run_id="r9")(9) == 9 and wf.with_options(run_id="r0")(0) == 0
    assert ran == [*range(10), -1, 0]


LOOP_CRASH = NOTE_HEAD + """

@durable.step
def processor(item: str) -> str:
    if item == os.environ.get("CRASH_AT"):
        os.kill(os.getpid(), signal.SIGKILL)
    note(item)
    return f"Processed: {item}"

@durable.step
def aggregate(outputs: list) -> str:
    note("aggregate")
    return " | ".join(outputs)

@durable.workflow(run_id="csv")
def workflow(items: list) -> str:
    return aggregate(durable.loop_over(processor, items, checkpoint_items=True))

run = workflow.run(["Alice", "Bob", "Charlie", "Dana"])
print(run.value)
"""


@pytest.mark.slow
def test_praisonai_loop_over_rows_resumes_after_kill_9(
    tmp_path: Any, child_env: dict[str, str]
) -> None:
    """TestLoopPattern.test_loop_from_csv with a crash: a loop over rows is
    killed with SIGKILL while processing the third; the next process
    processes only the rows without a kept result, then aggregates once."""
    import subprocess
    import sys

    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(LOOP_CRASH)
    crashed = subprocess.run(
        [sys.executable, str(script), str(log)],
        env=dict(child_env, CRASH_AT="Charlie"),
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == -9, crashed.stderr
    assert log.read_text().split() == ["Alice", "Bob"]
    done = subprocess.run(
        [sys.executable, str(script), str(log)], env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == " | ".join(
        f"Processed: {n}" for n in ("Alice", "Bob", "Charlie", "Dana")
    )
    assert log.read_text().split() == ["Alice", "Bob", "Charlie", "Dana", "aggregate"]


def test_dbos_unawaited_child_workflow(store: durable.Store) -> None:
    """test_unawaited_workflow, test_unawaited_workflow_exception: a parent
    that starts a child as an asyncio task and returns without awaiting it.
    The run settles its tasks before it ends, so the child completes (its
    step ran once) and the parent completes; a child that fails leaves the
    parent completed and itself failed with its message, and calling the
    parent again runs nothing (DBOS: the child's handle raises)."""
    ran: list[str] = []

    @durable.step
    async def work(s: str) -> str:
        ran.append(s)
        if s != "ok":
            raise ValueError(f"boom {s}")
        return s

    @durable.workflow(store=store)
    async def child_workflow(s: str) -> str:
        return await work(s)

    @durable.workflow(store=store)
    async def parent_workflow(s: str) -> None:
        asyncio.ensure_future(child_workflow(s))  # noqa: RUF006 - unawaited on purpose

    def quiet(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        ran.append(f"unretrieved {context['exception']}")

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(quiet)
        for s in ("ok", "alice"):
            run = await parent_workflow.with_options(run_id=s).run(s)
            assert (run.status, run.value) == ("completed", None)
            assert (await parent_workflow.with_options(run_id=s).run(s)).steps_executed == 0

    asyncio.run(main())
    infos = {i.run_id: (i.status, i.error) for i in child_workflow.runs()}
    assert infos == {"ok.0.0.0": ("completed", None), "alice.0.0.0": ("failed", "ValueError: boom alice")}
    assert ran[:2] == ["ok", "alice"] and ran.count("ok") == 1 and ran.count("alice") == 1


# -- LangGraph: several interrupts answered by one resume, subgraph state ----


def test_langgraph_multi_resume(store: durable.Store) -> None:
    """test_multi_resume: a parent fans out to five subgraphs (child runs,
    gathered), each interrupting with its prompt; one resume carrying an
    answer for every prompt finishes all five and the parent; the work each
    child did before its interrupt ran once."""
    ran: list[str] = []

    @durable.step
    async def prepare(prompt: str) -> str:
        ran.append(prompt)
        return prompt

    @durable.workflow(store=store)
    async def child_graph(prompt: str) -> str:
        await prepare(prompt)
        return str(durable.wait_for(prompt))

    @durable.workflow(store=store, run_id="multi")
    async def parent_graph(prompts: list[str]) -> list[str]:
        return list(await asyncio.gather(*(child_graph(p) for p in prompts)))

    prompts = ["a", "b", "c", "d", "e"]
    with pytest.raises(durable.Suspended):
        asyncio.run(parent_graph(prompts))
    assert {i.status for i in child_graph.runs()} == {"suspended"} and len(child_graph.runs()) == 5
    resume_map = {p: f"human input for prompt {p}" for p in prompts}
    run = asyncio.run(parent_graph.resume("multi", inputs=resume_map))
    assert run.value == [f"human input for prompt {p}" for p in prompts]
    assert sorted(ran) == prompts


def test_langgraph_subgraph_state(store: durable.Store) -> None:
    """test_subgraph_checkpoint_true / get_state(subgraphs=True): a
    subgraph's own state is readable (its history, each node's output); a
    parent forked from before the subgraph runs a new subgraph, one forked
    after it replays the subgraph's result without entering it."""
    ran: list[str] = []

    @durable.step
    def inner(x: int) -> int:
        ran.append(f"inner {x}")
        return x + 1

    @durable.workflow(store=store)
    def subgraph(x: int) -> int:
        return inner(inner(x))

    @durable.step
    def finish(y: int) -> int:
        ran.append("finish")
        return y * 10

    @durable.workflow(store=store, run_id="parent")
    def graph(x: int) -> int:
        return finish(subgraph(x))

    assert graph(1) == 30
    (child,) = subgraph.runs()
    assert child.parent == f"{graph.name}/parent@0"
    assert [s.value for s in subgraph.history(child.run_id) if s.position >= 0] == [2, 3]
    after = graph.fork("parent", at=1, new_run_id="after")
    assert (after.value, after.steps_replayed, after.steps_executed) == (30, 1, 1)
    before = graph.fork("parent", at=0, new_run_id="before")
    assert before.value == 30
    assert ran == ["inner 1", "inner 2", "finish", "finish", "inner 1", "inner 2", "finish"]


# -- joblib and Prefect: what counts in the key ------------------------------


def test_joblib_ignore_with_defaults(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_memory_ignore with its default given and not given, by position
    and by keyword (joblib's test_partial_decoration, ignore=['y']): the
    ignored argument never counts; the others bind with their defaults."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[tuple[int, int, int]] = []

    @durable.step(cache=durable.Cache(ignore=("verbose",)))
    def z(x: int, verbose: int = 0, scale: int = 1) -> int:
        ran.append((x, verbose, scale))
        return x * scale

    assert (z(1), z(1, 5), z(1, verbose=9), z(x=1, scale=1), z(1, 0, 1)) == (1, 1, 1, 1, 1)
    assert z(1, 0, 2) == 2 and z(1, 7, scale=2) == 2
    assert ran == [(1, 0, 1), (1, 0, 2)]


def test_prefect_task_source_counts_its_helpers(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TestTaskSourcePolicy / INPUTS + TASK_SOURCE: Prefect keys on the
    task's own source, so an edited helper it calls reuses the old output;
    durable's key follows the helpers, so a step built with another helper
    (same source of its own) computes, and the same helper hits."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    def make(helper: Any) -> Any:
        @durable.step(cache=True, name="task")
        def task(x: int) -> int:
            ran.append(x)
            return helper(x)

        return task

    def double(x: int) -> int:
        return x * 2

    def triple(x: int) -> int:
        return x * 3

    assert make(double)(2) == 4 and make(double)(2) == 4
    assert make(triple)(2) == 6
    assert ran == [2, 2]


CONFIGURED = """
import durable

AGENT_CONFIG = {"instructions": "old", "model": "m1"}
CRASH = []


@durable.step
def step1(x: int) -> str:
    return f"{AGENT_CONFIG['instructions']}:{x}"


@durable.step
def step2(s: str) -> str:
    return s + "!"


@durable.workflow(run_id="cfg")
def wf(x: int) -> str:
    a = step1(x)
    if CRASH:
        raise RuntimeError("crash between the steps")
    return step2(a)
"""


def test_praisonai_config_value_edit_changes_fingerprint(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TestConfigValueEditChangesFingerprint and TestDefinitionFingerprint
    (a whitespace edit keeps it, a semantic edit changes it): a module
    whose step reads a config dict; reformatting the module keeps the
    run's fingerprint (the resume replays step 1), an edit of one value of
    the dict changes it (the resume is refused, naming the dict)."""
    import importlib
    import sys

    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "praison_cfg_.py"

    def load(source: str, crash: bool) -> Any:
        module.write_text(source)
        sys.modules.pop("praison_cfg_", None)
        mod = importlib.import_module("praison_cfg_")
        mod.CRASH.extend([1] if crash else [])
        return mod

    try:
        mod = load(CONFIGURED, crash=True)
        with pytest.raises(RuntimeError):
            mod.wf(1)
        first = mod.wf.fingerprint
        mod = load(CONFIGURED.replace("\n\n\n", "\n\n\n\n# reformatted\n"), crash=False)
        assert mod.wf.fingerprint == first
        edited = load(CONFIGURED.replace('"old"', '"new"'), crash=False)
        assert edited.wf.fingerprint != first
        with pytest.raises(durable.DefinitionChangedError, match="AGENT_CONFIG"):
            edited.wf(1)
        mod = load(CONFIGURED, crash=False)
        run = mod.wf.run(1)
        assert (run.value, run.steps_replayed, run.steps_executed) == ("old:1!", 1, 1)
    finally:
        sys.modules.pop("praison_cfg_", None)


def test_dbos_spans(store: durable.Store) -> None:
    """tests/test_telemetry.py::test_spans: with a tracer provider set, a
    run is a root span and its step a child span, also around a span the
    body opens itself. DBOS parents the step's span under that manual span;
    durable makes operation spans from the events when the operation ends
    (docs/observability.md), so the step's parent is the run span. DBOS
    also makes the manual span a child of the workflow's; durable does not
    make the run span current while the body runs, so the manual span
    starts a trace of its own. A replay marks its step span replayed."""
    trace = pytest.importorskip("opentelemetry.trace")
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    old, once = trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done = provider, True
    ran: list[str] = []
    crash = [True]
    try:
        my_tracer = provider.get_tracer("user")

        @durable.step(name="test_step")
        def test_step() -> None:
            ran.append("step")

        @durable.workflow(store=store, name="test_workflow", run_id="spans")
        def test_workflow() -> None:
            with my_tracer.start_as_current_span("manual_span"):
                test_step()
            if crash and crash.pop():
                raise RuntimeError("crash after the step")

        with pytest.raises(RuntimeError):
            test_workflow()
        test_workflow()
    finally:
        trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE._done = old, once
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "durable.run test_workflow"]
    steps = [s for s in spans if s.name == "durable.step test_step"]
    manual = [s for s in spans if s.name == "manual_span"]
    assert (len(runs), len(steps), len(manual)) == (2, 2, 2) and ran == ["step"]
    for run, step, mine in zip(runs, steps, manual, strict=True):
        assert run.parent is None and run.attributes["durable.run_id"] == "spans"
        assert step.parent.span_id == run.context.span_id
        assert mine.parent is None  # as docs/observability.md says
    assert [s.attributes["durable.replayed"] for s in steps] == [False, True]


# -- PraisonAI: tests/unit/tools/test_async_tool_retry_parity.py --------------


@pytest.mark.parametrize("exc", [RuntimeError("boom"), ValueError("bad")])
def test_praisonai_async_tool_retry_parity(store: durable.Store, clock: Any, exc: Exception) -> None:
    """test_async_retries_a_raised_tool_exception, test_async_matches_sync
    _attempt_count, test_async_does_not_retry_programming_errors,
    test_async_honours_max_attempts: a sync and an async step with one
    retry policy (3 attempts, retrying RuntimeError only) try equally often,
    sleep the same delays, and record the same failed tries; an error the
    policy leaves out ends each at its first try."""
    calls: list[str] = []

    @durable.step(retries=2, retry_delay=0.5, backoff=2.0, retry_on=(RuntimeError,))
    def flaky() -> None:
        calls.append("sync")
        raise exc

    @durable.step(retries=2, retry_delay=0.5, backoff=2.0, retry_on=(RuntimeError,))
    async def aflaky() -> None:
        calls.append("async")
        raise exc

    @durable.workflow(store=store, run_id="sync")
    def sync_flow() -> None:
        flaky()

    @durable.workflow(store=store, run_id="async")
    async def async_flow() -> None:
        await aflaky()

    with pytest.raises(type(exc)):
        sync_flow()
    sync_slept, clock.slept[:] = list(clock.slept), []
    with pytest.raises(type(exc)):
        asyncio.run(async_flow())
    attempts = 3 if isinstance(exc, RuntimeError) else 1
    assert (calls.count("sync"), calls.count("async")) == (attempts, attempts)
    assert sync_slept == clock.slept == [0.5, 1.0][: attempts - 1]
    histories = [
        [f.message for s in wf.history(r) if s.position == 0 for f in s.failures]
        for wf, r in ((sync_flow, "sync"), (async_flow, "async"))
    ]
    assert histories[0] == histories[1] == [str(exc)] * attempts


MAIN_SCRIPT = """
import sys
import durable

@durable.step(cache=True)
def f(x):
    with open(sys.argv[1], "a") as log:
        log.write(f"{x}\\n")
    return x * 2

print(f(1), f(2), f(1))
"""


def test_joblib_function_defined_in_main(tmp_path: Any, child_env: dict[str, str]) -> None:
    """joblib's caching of functions defined in `__main__` (a script run
    twice): the second process is served the first one's entries, since
    the script's module is named by its file, never `__main__` alone nor
    its path; a copy of the script elsewhere is the same function."""
    import shutil
    import subprocess
    import sys

    script, log = tmp_path / "job.py", tmp_path / "log"
    script.write_text(MAIN_SCRIPT)
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(script, other / "job.py")
    for path in (script, script, other / "job.py"):
        done = subprocess.run(
            [sys.executable, str(path), str(log)], env=child_env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["2", "4", "2"]
    assert log.read_text().split() == ["1", "2"]


def test_dbos_bulk_resume(store: durable.Store) -> None:
    """test_bulk_resume: three runs stopped between their two steps are
    resumed together (DBOS: resume_workflows after cancel_workflows; a
    cancelled run is final in durable, so they stop by an interrupt and
    `recover()` resumes every interrupted run): step one ran three times,
    step two three times, and a second recovery finds nothing."""
    steps: list[str] = []
    stop = [True]

    @durable.step
    def step_one(x: int) -> None:
        steps.append(f"one {x}")

    @durable.step
    def step_two(x: int) -> None:
        steps.append(f"two {x}")

    @durable.workflow(store=store)
    def blocking_workflow(x: int) -> int:
        step_one(x)
        if stop[0]:
            raise KeyboardInterrupt
        step_two(x)
        return x

    for i in range(3):
        with pytest.raises(KeyboardInterrupt):
            blocking_workflow.with_options(run_id=f"wf{i}")(i)
    assert {i.status for i in blocking_workflow.runs()} == {"interrupted"}
    stop[0] = False
    reports = blocking_workflow.recover()
    assert sorted((r.run_id, r.status, r.value) for r in reports) == [
        (f"wf{i}", "completed", i) for i in range(3)
    ]
    assert sorted(steps) == sorted([f"one {i}" for i in range(3)] + [f"two {i}" for i in range(3)])
    assert blocking_workflow.recover() == []
