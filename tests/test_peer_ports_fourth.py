"""A fourth round of the peers' own test cases, ported to durable's API:
Temporal (tests/worker/test_replayer.py and test_workflow.py: histories
replayed against edited or diverging code, patches), joblib
(joblib/test/test_hashing.py: what hashes alike and apart) and the
counters their suites keep in module globals.

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves; tests/test_peer_ports.py,
test_peer_ports_more.py and test_peer_ports_third.py hold the earlier
ports."""

from __future__ import annotations

import asyncio
import collections
import decimal
import gc
import io
import pickle
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import NOTE_HEAD

# -- Temporal: tests/worker/test_replayer.py ----------------------------------


def _say_hello_flow(
    store: durable.Store, ran: list[str], replaying: list[bool]
) -> durable.Workflow[..., str]:
    """SayHelloWorkflow: one activity, then a wait for a signal (here an
    input). `replaying` stands for `workflow.unsafe.is_replaying()`: when
    set, the body sleeps before the step it recorded first."""

    @durable.step(name="say_hello")
    def say_hello(name: str) -> str:
        ran.append(name)
        return f"Hello, {name}!"

    @durable.workflow(store=store, name="say-hello", run_id=lambda name: f"hello-{name}")
    def flow(name: str) -> str:
        if replaying[0]:
            durable.sleep(0)
        result = say_hello(name)
        return f"{result} {durable.wait_for('finish')}"

    return flow


def test_temporal_replay_that_takes_another_path_is_refused(store: durable.Store) -> None:
    """test_replayer_workflow_nondeterministic: a body that does something
    else while replaying (a sleep where the activity was recorded) fails
    the replay with a non-determinism error (durable: NondeterminismError,
    naming the position, the recorded step and the call). Nothing executes,
    the record is kept, and the same run resumed on the path it recorded
    completes without running its step again (test_replayer_workflow_
    incomplete)."""
    ran: list[str] = []
    replaying = [False]
    flow = _say_hello_flow(store, ran, replaying)
    with pytest.raises(durable.Suspended):
        flow("Temporal")
    replaying[0] = True
    with pytest.raises(durable.NondeterminismError, match="say_hello") as refused:
        flow.resume("hello-Temporal", inputs={"finish": "done"})
    assert refused.value.position == 0 and ran == ["Temporal"]
    replaying[0] = False
    run = flow.resume("hello-Temporal", inputs={"finish": "done"})
    assert run.value == "Hello, Temporal! done" and ran == ["Temporal"]
    assert (run.steps_replayed, run.steps_executed) == (1, 1)


def test_temporal_recover_fails_slow_over_diverging_runs(store: durable.Store) -> None:
    """test_replayer_multiple_histories_fail_slow (and test_replayer_
    multiple_from_client): four histories replayed together, the second and
    fourth nondeterministic; each is reported on its own, the bad ones with
    their error, and the good ones still complete. durable's `recover()`
    resumes every failed run one after another; a run that diverges is
    reported failed with its NondeterminismError and does not stop the
    others. Each step ran once."""
    ran: list[str] = []
    diverge: set[str] = set()

    @durable.step(name="greet")
    def greet(name: str) -> str:
        ran.append(name)
        return name.upper()

    @durable.step(name="other")
    def other(name: str) -> str:
        ran.append("other-" + name)
        return name

    broken = [True]

    @durable.step(name="finish")
    def finish(text: str) -> str:
        if broken[0]:
            raise ConnectionError("the worker went away")
        return text + "!"

    @durable.workflow(store=store, name="histories", run_id=lambda name: f"h-{name}")
    def flow(name: str) -> str:
        first = other(name) if name in diverge else greet(name)
        return finish(first)

    names = ["a", "b", "c", "d"]
    for name in names:
        with pytest.raises(ConnectionError):
            flow(name)
    broken[0] = False
    diverge.update({"b", "d"})
    reports = {r.run_id: r for r in flow.recover()}
    assert {k: r.status for k, r in reports.items()} == {
        "h-a": "completed", "h-b": "failed", "h-c": "completed", "h-d": "failed"
    }  # fmt: skip
    assert reports["h-a"].value == "A!" and reports["h-c"].value == "C!"
    assert "NondeterminismError" in str(reports["h-b"].error)
    assert "NondeterminismError" in str(reports["h-d"].error)
    assert ran == names


def test_temporal_failed_history_replays_its_steps(store: durable.Store) -> None:
    """test_replayer_workflow_failed: a workflow that failed after its
    activity (should_error) replays as failed again. In durable the same
    call runs the body again (a failed run is not finished): the step is
    replayed, not executed, and the same error reaches the caller; nothing
    else is recorded."""
    ran: list[str] = []

    @durable.step
    def say_hello(name: str) -> str:
        ran.append(name)
        return f"Hello, {name}!"

    @durable.workflow(store=store, run_id="failed")
    def flow(name: str) -> str:
        say_hello(name)
        raise ValueError("Intentional error")

    for _ in range(2):
        with pytest.raises(ValueError, match="Intentional error"):
            flow("Temporal")
    assert ran == ["Temporal"]
    assert [(s.kind, s.status) for s in flow.history("failed")][1:] == [("step", "completed")]


def test_temporal_uuid_made_in_a_step_replays(store: durable.Store) -> None:
    """test_workflow_uuid: workflow.uuid4() differs between two workflows
    and is the same each time one is replayed, on a new worker too. In
    durable the value is made by a step: two runs get two uuids, a run
    resumed (a new call, after a suspend) gets its own again. One made in
    the body, outside any step, and passed to a step is a new argument on
    the resume: refused (the record was made by another call), never
    replayed as if it were the same call."""
    made: list[str] = []

    @durable.step
    def new_id() -> str:
        made.append(str(uuid.uuid4()))
        return made[-1]

    @durable.step
    def charge(key: str) -> str:
        return f"charged {key}"

    @durable.workflow(store=store, run_id=lambda n: f"uuid-{n}")
    def flow(n: int) -> str:
        key = new_id()
        return f"{charge(key)} {durable.wait_for('ok')}"

    for n in (1, 2):
        with pytest.raises(durable.Suspended):
            flow(n)
    runs = [flow.resume(f"uuid-{n}", inputs={"ok": "!"}) for n in (1, 2)]
    assert [r.value for r in runs] == [f"charged {made[0]} !", f"charged {made[1]} !"]
    assert made[0] != made[1] and len(made) == 2
    assert flow(1) == runs[0].value and len(made) == 2

    @durable.workflow(store=store, run_id="uuid-outside")
    def outside() -> str:
        return f"{charge(str(uuid.uuid4()))} {durable.wait_for('ok')}"

    with pytest.raises(durable.Suspended):
        outside()
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        outside.resume("uuid-outside", inputs={"ok": "!"})


EDITED_AFTER_CRASH = NOTE_HEAD + """

@durable.step
def fetch(n: int) -> int:
    note(f"fetch{n}")
    return n

@durable.step
def audit(n: int) -> int:
    note(f"audit{n}")
    return 100

@durable.step
def publish(total: int) -> int:
    note("publish")
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return total

@durable.workflow(run_id="edited")
def flow() -> int:
    total = fetch(1) + fetch(2)
    return publish(total)

run = flow.run()
print(run.value, run.steps_replayed, run.steps_executed)
"""


@pytest.mark.slow
def test_temporal_worker_restarted_with_edited_code_after_kill_9(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Temporal's replay on a new worker after the old one died, with the
    workflow's code edited in between (an activity added before the one in
    flight: a non-determinism error on replay). The first process is
    killed with SIGKILL inside `publish`; the script gains an `audit` step
    before it. The next process is refused before anything runs; with
    DURABLE_ON_CHANGE=rerun it replays both fetches, runs `audit` and
    `publish`, and a last process gets the recorded value, running nothing."""
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(EDITED_AFTER_CRASH)

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), str(log)],
            env=dict(child_env, **env), capture_output=True, text=True,
        )  # fmt: skip

    assert run(CRASH="1").returncode == -9
    assert log.read_text().split() == ["fetch1", "fetch2", "publish"]
    script.write_text(
        EDITED_AFTER_CRASH.replace("return publish(total)", "return publish(total + audit(3))")
    )
    refused = run()
    assert refused.returncode == 1 and "DefinitionChangedError" in refused.stderr
    assert log.read_text().split() == ["fetch1", "fetch2", "publish"]
    rerun = run(DURABLE_ON_CHANGE="rerun")
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.split() == ["103", "2", "2"]
    assert log.read_text().split() == ["fetch1", "fetch2", "publish", "audit3", "publish"]
    again = run()
    assert again.returncode == 0 and again.stdout.split() == ["103", "0", "0"]
    assert log.read_text().split() == ["fetch1", "fetch2", "publish", "audit3", "publish"]

# -- Temporal: non-determinism after an edit (tests/worker/test_workflow.py) --


RAN: list[str] = []  # what the steps below executed (each test empties it first)


@durable.step(name="a")
def step_a(n: int) -> str:
    RAN.append(f"a{n}")
    return f"a{n}"


@durable.step(name="b")
def step_b(n: int) -> str:
    RAN.append(f"b{n}")
    return f"b{n}"


@durable.step(name="x")
def step_x(n: int) -> str:
    RAN.append(f"x{n}")
    return f"x{n}"


# The workflow's code before and after each edit; each waits for an input.
def original() -> list[Any]:
    return [step_a(1), step_b(1), durable.wait_for("go")]


def step_added_first() -> list[Any]:
    return [step_x(1), step_a(1), step_b(1), durable.wait_for("go")]


def step_removed() -> list[Any]:
    return [step_b(1), durable.wait_for("go")]


def steps_reordered() -> list[Any]:
    return [step_b(1), step_a(1), durable.wait_for("go")]


def argument_changed() -> list[Any]:
    return [step_a(2), step_b(1), durable.wait_for("go")]


def step_added_last() -> list[Any]:
    return [step_a(1), step_b(1), step_x(1), durable.wait_for("go")]


EDITS: dict[str, tuple[Callable[[], list[Any]], list[str]]] = {
    # edit: (the edited code, what on_change="rerun" executes again)
    "step-added-first": (step_added_first, ["x1", "a1", "b1"]),
    "step-removed": (step_removed, ["b1"]),
    "steps-reordered": (steps_reordered, ["b1", "a1"]),
    "argument-changed": (argument_changed, ["a2", "b1"]),
    "step-added-last": (step_added_last, ["x1"]),
}


@pytest.mark.parametrize("edit", EDITS)
def test_temporal_edited_workflow_on_replay(store: durable.Store, edit: str) -> None:
    """Temporal's non-determinism on replay after a code change (an
    activity added, removed, reordered, called with other arguments:
    NondeterminismError unless the change is guarded by `patched()`). In
    durable the edited definition is refused before anything runs
    (DefinitionChangedError, default on_change="refuse"); with
    on_change="rerun" the run replays up to the first call that differs
    and executes from there (what follows is discarded: `b` runs again
    after an edited `a`); with rebase=True a call of another step where
    one was recorded is a NondeterminismError, while the same steps in
    the same order replay their records deliberately."""
    RAN.clear()
    as_edited = durable.workflow(store=store, name="edited", run_id="edited")
    with pytest.raises(durable.Suspended):
        as_edited(original)()
    assert RAN == ["a1", "b1"]
    code, rerun = EDITS[edit]
    edited = as_edited(code)
    with pytest.raises(durable.DefinitionChangedError):
        edited.resume("edited", inputs={"go": "!"})
    assert RAN == ["a1", "b1"]
    if edit in ("step-added-last", "argument-changed"):
        with pytest.warns(UserWarning, match="rebase"):
            based = edited.with_options(rebase=True).resume("edited", inputs={"go": "!"})
        executed = ["x1"] if edit == "step-added-last" else []
        assert RAN == ["a1", "b1", *executed]
        assert based.value == ["a1", "b1", *executed, "!"]  # the records, as asked
        return
    with pytest.warns(UserWarning, match="rebase"), pytest.raises(durable.NondeterminismError):
        edited.with_options(rebase=True).resume("edited", inputs={"go": "!"})
    assert RAN == ["a1", "b1"]
    run = edited.with_options(on_change="rerun").resume("edited", inputs={"go": "!"})
    assert RAN == ["a1", "b1", *rerun]
    assert run.value == [*rerun, "!"]  # every call from the first edited one on ran again
    assert run.steps_executed == len(rerun) + 1  # and the input's position


def test_temporal_patch_on_a_completed_run(store: durable.Store) -> None:
    """test_workflow_patch: a run completed by the pre-patch code; the
    patched code (workflow.patched("my-patch")) gives the old result for
    that run and the new one for a new run. durable has no patch markers
    (adapted): the completed run called again under the edited code is
    refused rather than served the pre-patch value as the new code's;
    a new run gives "post-patch"; with on_change="rerun" the old run's
    body runs again over its replayed step and completes as post-patch."""
    ran: list[str] = []

    @durable.step(name="load")
    def load() -> int:
        ran.append("load")
        return 1

    @durable.workflow(store=store, name="patch-workflow", run_id="pre")
    def pre_patch() -> str:
        load()
        return "pre-patch"

    assert pre_patch() == "pre-patch"

    @durable.workflow(store=store, name="patch-workflow", run_id="pre")
    def post_patch() -> str:
        load()
        return "post-patch"

    with pytest.raises(durable.DefinitionChangedError):
        post_patch()
    assert post_patch.with_options(run_id="post")() == "post-patch"
    again = post_patch.with_options(on_change="rerun").run()
    assert again.value == "post-patch" and (again.steps_replayed, again.steps_executed) == (1, 0)
    assert ran == ["load", "load"]  # once per run


# -- DBOS: tests/test_patch.py, test_duplication_policy.py, test_singleexec.py -


def test_dbos_patch_as_a_definition_change(store: durable.Store) -> None:
    """test_patch: v1 (step_one + step_two) completes with 3; the patched
    code (`if DBOS.patch("v2"): step_three()`) gives 5 to a new run, and a
    fork of the v1 run replays the pre-patch path (3). durable has no patch
    markers (adapted): a fork keeps the source's definition, so under the
    edited code it is refused before anything runs, and the fork stays to
    be run deliberately: with on_change="rerun" it runs from the first call
    that differs (step_three where step_one was recorded) and gives the
    new code's 5. A fork of a run of the edited code replays it whole."""
    ran: list[str] = []

    def step(name: str, value: int) -> Callable[[], int]:
        def body() -> int:
            ran.append(name)
            return value

        return durable.step(name=name)(body)

    step_one, step_two, step_three = step("one", 1), step("two", 2), step("three", 3)

    @durable.workflow(store=store, name="patched", run_id="v1")
    def v1() -> int:
        return step_one() + step_two()

    assert v1() == 3

    @durable.workflow(store=store, name="patched", run_id="v2")
    def v2() -> int:
        return step_three() + step_two()

    assert v2() == 5
    assert ran == ["one", "two", "three", "two"]
    with pytest.raises(durable.DefinitionChangedError, match="one: removed"):
        v2.fork("v1", at=2, new_run_id="v1-fork")
    assert ran == ["one", "two", "three", "two"]
    forked = v2.with_options(on_change="rerun").resume("v1-fork")
    assert (forked.value, forked.steps_replayed, forked.steps_executed) == (5, 0, 2)
    again = v2.fork("v2", at=2)
    assert (again.value, again.steps_replayed, again.steps_executed) == (5, 2, 0)
    assert ran == ["one", "two", "three", "two", "three", "two"]


def test_dbos_return_existing_is_not_served_to_other_arguments(
    store: durable.Store,
) -> None:
    """test_return_existing_attaches: a second start under the first one's
    deduplication id attaches to it, discarding its own arguments, and gets
    "first-done". durable never hands a run's value to a call with other
    arguments (DESIGN §2, completion): the second caller of the run id,
    waiting while the first holds it or arriving after, is refused with
    both values named, and nothing runs for it; the first's own arguments
    again get its value."""
    ran: list[str] = []

    @durable.step
    def work(inp: str) -> str:
        ran.append(inp)
        return f"{inp}-done"

    @durable.workflow(store=store, run_id="dedup")
    def gated(inp: str) -> str:
        return work(inp)

    assert gated("first") == "first-done"
    with pytest.raises(durable.DefinitionChangedError, match="'first' -> 'second'"):
        gated.with_options(wait=5)("second")
    assert gated("first") == "first-done" and ran == ["first"]


def test_dbos_compensation_in_the_body(store: durable.Store) -> None:
    """test_step_undoredo, test_step_undoredo2: a body that catches a
    failed step and calls a compensating one (try/except, and try/finally
    with a flag). The failed step's error reaches the body; the
    compensation is recorded; the same run id called again (DBOS starts it
    twice) returns the recorded value and runs none of the three again."""
    ran: list[str] = []

    @durable.step
    def start_action() -> None:
        ran.append("start")
        raise ConnectionError("the external system refused")

    @durable.step
    def cancel_action() -> str:
        ran.append("cancel")
        return "aborted"

    @durable.step
    def complete_action(state: str) -> str:
        ran.append("complete")
        return f"completed after {state}"

    @durable.workflow(store=store, run_id="undo")
    def with_except() -> str:
        try:
            start_action()
            state = "started"
        except ConnectionError:
            state = cancel_action()
        return complete_action(state)

    @durable.workflow(store=store, run_id="undo-finally")
    def with_finally() -> str:
        finished, state = False, "started"
        try:
            start_action()
            finished = True
        finally:
            if not finished:
                state = cancel_action()
                return complete_action(state)  # noqa: B012
        return complete_action(state)

    for flow, run_id in ((with_except, "undo"), (with_finally, "undo-finally")):
        ran.clear()
        assert flow() == flow() == "completed after aborted"
        assert ran == ["start", "cancel", "complete"]
        steps = [s for s in flow.history(run_id) if s.kind == "step"]
        history = [(s.name.rpartition(".")[2], s.status) for s in steps]
        assert history == [
            ("start_action", "failed"), ("cancel_action", "completed"),
            ("complete_action", "completed"),
        ]  # fmt: skip


# -- Prefect: tests/test_task_engine.py, tests/test_tasks.py ---------------------


def test_prefect_none_return_value_does_persist(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_none_return_value_does_persist: a task cached under one key that
    returned None the first time is served None the second time (None is
    an output, not "no entry"), though it would now return 42. The task
    decides by a file it reads, which is no part of its key; also in a
    run, where the hit takes a position of its own."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    marker, ran = tmp_path / "first-ran", []

    @durable.step(cache=durable.Cache(key=lambda: "test-none-caches"))
    def none_first() -> int | None:
        ran.append(1)
        if marker.exists():
            return 42
        marker.touch()
        return None

    @durable.workflow(store=durable.open_store(tmp_path / "store"))
    def flow() -> list[int | None]:
        return [none_first(), none_first()]

    assert none_first() is None and none_first() is None
    assert flow() == [None, None] and ran == [1]


def test_prefect_nested_cached_inner_task(store: durable.Store, tmp_path: Any) -> None:
    """test_nested_cache_key_fn_inner_task_cached_default / _eager: a cached
    inner task called twice by an outer task. Prefect commits the inner
    entry lazily (with the outer transaction), so by default both inner
    calls compute; durable writes an entry when its call returns (as
    Prefect's eager commit), so the second inner call is a hit: the inner
    body runs once, and both give 4. The outer task, also cached, is a hit
    in a second run."""
    ran: list[str] = []

    @durable.step(cache=True)
    def inner_task(x: int) -> int:
        ran.append("inner")
        return x * 2

    @durable.step(cache=True)
    def outer_task(x: int) -> tuple[int, int]:
        ran.append("outer")
        return inner_task(x), inner_task(x)

    @durable.workflow(store=store, run_id=lambda n: f"nested-{n}")
    def my_flow(n: int) -> tuple[int, int]:
        return outer_task(2)

    assert my_flow(1) == (4, 4) and ran == ["outer", "inner"]
    assert my_flow(2) == (4, 4) and ran == ["outer", "inner"]


# -- LangGraph: libs/langgraph/tests/test_pregel_async.py ----------------------


def test_langgraph_imp_task_cancel(store: durable.Store) -> None:
    """test_imp_task_cancel: two mapper tasks, the body cancels one of them,
    gathers the other, then interrupts. The cancelled task is no result:
    the resume replays the finished mapper and runs the cancelled one again
    (cancelled again), so mapper_calls goes 2 -> 3 and mapper_cancels
    1 -> 2, as in LangGraph; the answer reaches the value."""
    calls: list[int] = []
    cancels: list[int] = []

    @durable.step
    async def mapper(i: int) -> str:
        calls.append(i)
        try:
            if i == 1:
                await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            cancels.append(i)
            raise
        return str(i) * 2

    @durable.workflow(store=store, run_id="imp-cancel")
    async def graph(inputs: list[int]) -> list[str]:
        futures = [asyncio.ensure_future(mapper(i)) for i in inputs]
        while calls.count(1) == cancels.count(1):  # until mapper(1) is in flight
            await asyncio.sleep(0)
        futures.pop().cancel()
        mapped = await asyncio.gather(*futures)
        answer = durable.wait_for("question")
        return [m + answer for m in mapped]

    with pytest.raises(durable.Suspended):
        asyncio.run(graph([0, 1]))
    assert (sorted(calls), cancels) == ([0, 1], [1])
    run = asyncio.run(graph.resume("imp-cancel", inputs={"question": "answer"}))
    assert run.value == ["00answer"]
    assert (sorted(calls), cancels) == ([0, 1, 1], [1, 1])


# -- joblib: joblib/test/test_hashing.py ---------------------------------------


def _counted_ident(ran: list[Any]) -> Callable[[Any], Any]:
    @durable.step(cache=True)
    def ident(x: Any) -> Any:
        ran.append(x)
        return x

    return ident


HASH_INPUTS: list[Any] = [
    1, 2, 1.0, 2.0, 1 + 1j, 2.0 + 1j, "a", "b", (1,), (1, 1), [1], [1, 1],
    {1: 1}, {1: 2}, {2: 1}, None, gc.collect, [1].append,
    {"a", 1}, {"a", 1, ("a", 1)},  # unorderable elements
    {"a": 1, 1: 2}, {"a": 1, 1: 2, "d": {"a": 1}},  # unorderable keys
    True, 0, False, [(1,)], ((1,),), frozenset({1}), {1},
]  # fmt: skip


def test_joblib_trivial_hash(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_trivial_hash: two of these objects hash alike only when they are
    the same object (1 and 1.0, (1,) and [1], {1: 2} and {2: 1} apart; here
    also 1, True and 1.0, 0 and False, a set and a frozenset). Each computes
    once, and every later call is served its own value, of its own type."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran: list[Any] = []
    ident = _counted_ident(ran)
    for value in HASH_INPUTS:
        ident(value)
    assert len(ran) == len(HASH_INPUTS)
    for value in HASH_INPUTS:
        served = ident(value)
        assert type(served) is type(value)
        assert callable(value) or served == value
    assert len(ran) == len(HASH_INPUTS)


def test_joblib_hash_methods_and_equal_instances(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_hash_methods, test_bound_methods_hash, test_string,
    test_set_decimal_hash: a bound method hashes with its instance (the
    `extend` of two deques of other contents apart, the `flush` of one
    StringIO alike, the same method of two equal instances alike); a dict
    holding a string object or its unpickled copy alike; a set of Decimals
    in either insertion order (NaN included) alike."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran: list[Any] = []
    ident = _counted_ident(ran)

    class Klass:
        def f(self, x: int) -> int:
            return x

    buffer = io.StringIO("a")
    first = {"foo": "bar"}
    pairs = [
        (collections.deque(range(10)).extend, collections.deque(range(9)).extend, 2),
        (buffer.flush, buffer.flush, 1),
        (Klass().f, Klass().f, 1),
        ([first, {"foo": "bar"}], [first, pickle.loads(pickle.dumps({"foo": "bar"}))], 1),
        (
            {decimal.Decimal(0), decimal.Decimal("NaN")},
            {decimal.Decimal("NaN"), decimal.Decimal(0)},
            1,
        ),
    ]
    for one, two, computed in pairs:
        ran.clear()
        ident(one)
        ident(two)
        assert len(ran) == computed, (one, two)


def test_joblib_numpy_hashing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_numpy_scalar, test_0d_and_1d_array_hashing_is_different,
    test_hash_object_dtype, test_numpy_datetime_array, test_dict_hash,
    test_set_hash: numpy scalars of other values, a 0-d and a 1-d array
    apart; two object arrays of equal arrays alike; datetime64 arrays of
    other units apart; a dict or set a cached call returned, passed back
    (its own unpickled copy), alike."""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran: list[Any] = []
    ident = _counted_ident(ran)
    names = [f"#s{i:05d}__c_maps.nii.gz" for i in range(12069, 12082)]

    def objects() -> Any:
        return np.array([np.arange(i) for i in range(6)], dtype=object)

    pairs = [
        (np.float64(2.0), np.float64(3.0), 2),
        (np.array(0), np.array([0]), 2),
        (objects(), objects(), 1),
        (np.arange(5).astype("datetime64[s]"), np.arange(5).astype("datetime64[D]"), 2),
        (np.arange(5).astype("timedelta64[D]"), np.arange(5).astype("timedelta64[D]"), 1),
    ]
    for one, two, computed in pairs:
        ran.clear()
        ident(one)
        served = ident(two)
        assert len(ran) == computed, (one, two)
        assert served.dtype == two.dtype and served.shape == two.shape
    for value in ({n: [33] for n in names}, set(names)):
        ran.clear()
        again = ident(pickle.loads(pickle.dumps(ident(value))))
        assert again == value and len(ran) == 1


# -- a counter kept in a module global, as the peers' suites keep them ---------

SEEN: list[int] = []
# The module empties its counter itself, as a test module's reset or a
# notebook cell run again does: a statement that changes SEEN in place, so
# a step READING SEEN counts what it holds (`_fingerprint.contents`).
SEEN.clear()


@durable.step
def noted(x: int) -> int:
    SEEN.append(x)
    return x * 2


@durable.step(cache=True, name="noted_cached")
def noted_cached(x: int) -> int:
    SEEN.append(x)
    return x * 3


@durable.step(cache=True)
def seen_so_far() -> int:
    return len(SEEN)


def see(*xs: int, clear: bool = False) -> None:
    """Changes SEEN from outside the steps. (A function that changes SEEN
    counts among its statements, with what it names: the test below calls
    this one rather than naming both SEEN and the steps.)"""
    if clear:
        SEEN.clear()
    SEEN.extend(xs)


def test_joblib_counter_in_a_module_global(
    store: durable.Store, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """joblib's test_memory_integration counts calls in a list the function
    appends to (`accumulator.append(1)`), DBOS's and Prefect's suites in
    module globals. A step that only appends to such a global does not
    compute from it: a resume in the same process replays the step (it
    was refused as changed, "calls changed", because the step's own
    append had changed the global's contents), and a cached step is
    served (it computed every time). A step that reads the global still
    counts what it holds: it is not served the length of before."""
    see(clear=True)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))

    @durable.workflow(store=store, run_id="counted")
    def flow(x: int) -> int:
        return noted(x) + durable.wait_for("more")

    with pytest.raises(durable.Suspended):
        flow(1)
    run = flow.resume("counted", inputs={"more": 10})
    assert (run.value, run.steps_replayed, SEEN) == (12, 1, [1])
    assert [noted_cached(5), noted_cached(5)] == [15, 15] and SEEN == [1, 5]
    counted = seen_so_far()
    see(7)
    assert seen_so_far() == counted + 1


ALIASED = """
import durable

LOG = []
ALIAS = LOG  # the same list under a second name
LOG.append("boot")

@durable.step(cache=True)
def noted_then_counted(x: int) -> int:
    LOG.append(x)
    return len(ALIAS)
"""


def test_joblib_counter_read_through_another_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counter of test_joblib_counter_in_a_module_global appended to by
    one name and read by another (`ALIAS = LOG`): the step reads what it
    holds, so a second equal call computes again (3, not the 2 of the
    first): only a name the step never reads is its state alone."""
    (tmp_path / "peers7_aliased.py").write_text(ALIASED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.delitem(sys.modules, "peers7_aliased", raising=False)
    import peers7_aliased as aliased  # type: ignore[import-not-found]

    assert [aliased.noted_then_counted(9), aliased.noted_then_counted(9)] == [2, 3]
    sys.modules.pop("peers7_aliased", None)
