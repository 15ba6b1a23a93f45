"""The peers' own test cases, ported to durable's API: DBOS Transact
(tests/test_dbos.py, test_failures.py, test_classdecorators.py), joblib
(joblib/test/test_memory.py), Prefect (tests/test_cache_policies.py and the
caching tests of tests/test_tasks.py) and LangGraph (interrupts, resume,
update_state and time travel of libs/langgraph/tests/test_pregel*.py).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves."""

from __future__ import annotations

import asyncio
import copy
import functools
import threading
import warnings
from typing import Any

import pytest

import durable

from .clikit import NOTE_HEAD

# -- DBOS: tests/test_dbos.py -------------------------------------------------


def test_dbos_simple_workflow_runs_once_per_id(store: durable.Store) -> None:
    """test_simple_workflow: the same workflow id again returns the recorded
    result; neither the body nor its steps run again."""
    ran: list[str] = []

    @durable.step
    def transaction(var2: str) -> str:
        ran.append("txn")
        return var2 + "1"

    @durable.step
    def step(var: str) -> str:
        ran.append("step")
        return var

    @durable.workflow(store=store)
    def test_workflow(var: str, var2: str) -> str:
        ran.append("wf")
        return transaction(var2) + step(var)

    assert test_workflow("bob", "bob") == "bob1bob"
    alice = test_workflow.with_options(run_id="wfuuid")
    assert alice("alice", "alice") == "alice1alice"
    assert alice("alice", "alice") == "alice1alice"
    run = alice.run("alice", "alice")
    assert (run.value, run.steps_executed) == ("alice1alice", 0)
    assert ran == ["wf", "txn", "step"] * 2


def test_dbos_child_workflow_has_its_own_run(store: durable.Store) -> None:
    """test_child_workflow: a workflow called in a workflow is a child run,
    listed with its parent; a parent re-run replays the child's result."""
    ran: list[str] = []

    @durable.workflow(store=store)
    def child_workflow(var: str) -> str:
        ran.append(var)
        return var + "_child"

    @durable.workflow(store=store, run_id="parent")
    def parent_workflow() -> str:
        return child_workflow("test") + child_workflow("async")

    assert parent_workflow() == "test_childasync_child"
    assert parent_workflow() == "test_childasync_child"
    assert ran == ["test", "async"]
    parents = sorted(info.parent or "" for info in child_workflow.runs())
    assert parents == [f"{parent_workflow.name}/parent@0", f"{parent_workflow.name}/parent@1"]


def test_dbos_child_workflow_assigned_id(store: durable.Store) -> None:
    """test_child_workflow_assigned_id: a child with an assigned id called
    again returns its recorded result (the transaction ran once). DBOS also
    returns "first1" to a call of that id with the argument "second";
    durable refuses a run re-called with other arguments (DESIGN §2,
    Completion: never the old value)."""
    txn: list[str] = []

    @durable.step
    def transaction(var: str) -> str:
        txn.append(var)
        return var + "1"

    @durable.workflow(store=store)
    def child_with_assigned_id(var: str) -> str:
        run = durable.current_run()
        assert run is not None and run.run_id == "assigned_child_id"
        return transaction(var)

    assigned = child_with_assigned_id.with_options(run_id="assigned_child_id")

    @durable.workflow(store=store, run_id="parent")
    def parent_with_assigned_child(second: str) -> str:
        return assigned("first") + assigned(second)

    assert parent_with_assigned_child("first") == "first1first1"
    assert parent_with_assigned_child("first") == "first1first1"
    assert txn == ["first"]
    with pytest.raises(durable.DefinitionChangedError):
        parent_with_assigned_child.with_options(run_id="other")("second")
    assert txn == ["first"]


def test_dbos_exception_workflow(store: durable.Store) -> None:
    """test_exception_workflow: errors raised by steps reach the body and
    the caller with their message. DBOS records a failed step as its
    outcome; in durable a failed step never counts as finished (DESIGN §2),
    so the same id again runs the failing steps again and replays the ones
    that succeeded."""
    ran: list[str] = []

    @durable.step
    def fine() -> int:
        ran.append("fine")
        return 1

    @durable.step
    def exception_step(var: str) -> str:
        ran.append("exc")
        raise Exception(var)

    @durable.workflow(store=store, run_id="wfuuid")
    def exception_workflow() -> None:
        fine()
        try:
            exception_step("test error")
        except Exception as e:
            err = e
        raise err

    for _ in range(2):
        with pytest.raises(Exception) as exc_info:
            exception_workflow()
        assert str(exc_info.value) == "test error"
    assert ran == ["fine", "exc", "exc"]
    (info,) = exception_workflow.runs()
    assert info.status == "failed" and info.error == "Exception: test error"


def test_dbos_temp_workflow_and_nested_steps(store: durable.Store) -> None:
    """test_temp_workflow, test_nested_steps: a step outside a workflow is a
    plain call (no run is made); a step called by a step is a plain call
    and takes no position of its own."""
    ran: list[str] = []

    @durable.step
    def inner_step(var: str) -> str:
        ran.append(var)
        return var

    @durable.step
    def outer_step(var: str) -> str:
        return inner_step(var)

    @durable.workflow(store=store, run_id="nested")
    def workflow() -> str:
        return outer_step("x")

    assert inner_step("var") == "var" and outer_step("var2") == "var2"
    assert ran == ["var", "var2"] and workflow.runs() == []
    assert workflow() == "x" and workflow() == "x"
    assert ran == ["var", "var2", "x"]
    steps = [s for s in workflow.history("nested") if s.position >= 0]
    assert [(s.position, s.name) for s in steps] == [(0, outer_step.name)]


def test_dbos_recovery_replays_a_step_that_returned_none(store: durable.Store) -> None:
    """test_recovery_workflow, test_recovery_workflow_step: recovery runs
    the body again but not its finished steps, one of which returned None
    (None is an output, not a missing record)."""
    ran: list[str] = []
    crash = [True]

    @durable.step
    def transaction(var2: str) -> str:
        ran.append("txn")
        return var2 + "1"

    @durable.step
    def return_none() -> None:
        ran.append("none")

    @durable.workflow(store=store, run_id="recover")
    def test_workflow(var: str, var2: str) -> str:
        ran.append("wf")
        res = transaction(var2)
        assert return_none() is None
        if crash and crash.pop():
            raise RuntimeError("crashed after the steps")
        return res + var

    with pytest.raises(RuntimeError):
        test_workflow("bob", "bob")
    run = test_workflow.run("bob", "bob")
    assert (run.value, run.steps_replayed, run.steps_executed) == ("bob1bob", 2, 0)
    assert ran == ["wf", "txn", "none", "wf"]


def test_dbos_workflow_returns_none(store: durable.Store) -> None:
    """test_workflow_returns_none: a completed run whose value is None is
    completed; calling it again does not run the body."""
    ran: list[int] = []

    @durable.workflow(store=store, run_id="none")
    def test_workflow(var: str, var2: str) -> None:
        ran.append(1)
        assert var == var2 == "bob"

    assert test_workflow("bob", "bob") is None
    assert test_workflow("bob", "bob") is None
    run = test_workflow.run("bob", "bob")
    assert (run.status, run.value, ran) == ("completed", None, [1])


def test_dbos_custom_names(store: durable.Store) -> None:
    """test_custom_names: a workflow and a step keep the name given; two
    functions of one Python name with other given names are two workflows."""

    @durable.step(name="step_name")
    def step() -> str:
        run = durable.current_run()
        assert run is not None
        return run.run_id

    @durable.workflow(store=store, name="workflow_name", run_id="a")
    def workflow() -> str:
        return step()

    assert workflow.name == "workflow_name" and workflow() == "a"
    assert [s.name for s in workflow.history("a") if s.position >= 0] == ["step_name"]

    @durable.workflow(store=store, name="another_workflow")  # type: ignore[no-redef]
    def workflow(x: int) -> int:
        return x

    assert workflow(5) == 5
    assert [i.workflow for i in workflow.runs()] == ["another_workflow"]


# -- DBOS: tests/test_failures.py ---------------------------------------------


class Fatal(Exception):
    pass


class Retryable(Exception):
    pass


def test_dbos_step_retries(store: durable.Store, clock: Any) -> None:
    """test_step_retries, test_step_retries_no_final_sleep: max_attempts=2
    (retries=1) runs the body twice, sleeps once between the attempts and
    not after the last. DBOS raises DBOSMaxStepRetriesExceeded holding the
    errors; durable raises the original exception and keeps every failed
    attempt in the history."""
    counter: list[int] = []

    @durable.step(retries=1, retry_delay=1.0, backoff=2.0)
    def failing_step() -> None:
        counter.append(1)
        raise Exception("fail")

    @durable.workflow(store=store, run_id="retries")
    def failing_workflow() -> None:
        failing_step()

    with pytest.raises(Exception, match="fail"):
        failing_step()  # a plain call: no retries
    assert len(counter) == 1
    counter.clear()
    with pytest.raises(Exception, match="fail"):
        failing_workflow()
    assert len(counter) == 2 and clock.slept == [1.0]
    (step,) = [s for s in failing_workflow.history("retries") if s.position == 0]
    assert [f.message for f in step.failures] == ["fail", "fail"]


def test_dbos_step_should_retry(store: durable.Store, clock: Any) -> None:
    """test_step_should_retry: an exception the retry policy does not cover
    ends the step at its first failure; a covered one uses every attempt."""
    fatal: list[int] = []
    retryable: list[int] = []

    @durable.step(retries=3, retry_delay=0, retry_on=(Retryable,))
    def fatal_step() -> None:
        fatal.append(1)
        raise Fatal("no retry")

    @durable.step(retries=3, retry_delay=0, retry_on=(Retryable,))
    def retryable_step() -> None:
        retryable.append(1)
        raise Retryable("retry")

    @durable.workflow(store=store)
    def fatal_workflow() -> None:
        fatal_step()

    @durable.workflow(store=store)
    def retryable_workflow() -> None:
        retryable_step()

    with pytest.raises(Fatal, match="no retry"):
        fatal_workflow()
    with pytest.raises(Retryable):
        retryable_workflow()
    assert (len(fatal), len(retryable)) == (1, 4)


def test_dbos_step_should_retry_on_last_attempt(store: durable.Store, clock: Any) -> None:
    """test_step_should_retry_on_last_attempt: a fatal error after retried
    ones propagates as itself."""
    counter: list[int] = []

    @durable.step(retries=2, retry_delay=0, retry_on=(Retryable,))
    def mixed_step() -> None:
        counter.append(1)
        if len(counter) < 3:
            raise Retryable("retry me")
        raise Fatal("stop now")

    @durable.workflow(store=store)
    def mixed_workflow() -> None:
        mixed_step()

    with pytest.raises(Fatal, match="stop now"):
        mixed_workflow()
    assert len(counter) == 3


def test_dbos_step_status_counts_attempts(store: durable.Store, clock: Any) -> None:
    """test_step_status: inside a retried step the live run says which
    attempt this is (from 0) and at which position the step is."""
    seen: list[tuple[int, int]] = []

    @durable.step(retries=4, retry_delay=0)
    def failing_step() -> None:
        run = durable.current_run()
        assert run is not None
        seen.append((run.step_index, run.attempt))
        if len(seen) < 5:
            raise Exception("fail")

    @durable.workflow(store=store, run_id="status")
    def failing_workflow() -> None:
        durable.sleep(0)
        failing_step()

    assert failing_workflow() is None
    assert seen == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4)]


def test_dbos_keyboardinterrupt_during_retries(store: durable.Store, clock: Any) -> None:
    """test_keyboardinterrupt_during_retries: a KeyboardInterrupt in a
    retried step is not retried; it propagates, the run is interrupted, and
    the next call runs the step again and completes."""
    raise_interrupt = [True]
    tries: list[int] = []

    @durable.step(retries=2, retry_delay=0)
    def failing_step() -> None:
        tries.append(1)
        if raise_interrupt[0]:
            raise KeyboardInterrupt

    @durable.workflow(store=store, run_id="ki")
    def failing_workflow() -> str:
        failing_step()
        run = durable.current_run()
        assert run is not None
        return run.run_id

    with pytest.raises(KeyboardInterrupt):
        failing_workflow()
    assert len(tries) == 1
    assert [i.status for i in failing_workflow.runs()] == ["interrupted"]
    raise_interrupt[0] = False
    assert failing_workflow() == "ki" and len(tries) == 2


def test_dbos_nonserializable_return(store: durable.Store) -> None:
    """test_nonserializable_return: a step whose output cannot be recorded
    fails the call with an error naming the step (DBOS: TypeError); nothing
    is recorded, so the next call runs the step again."""
    ran: list[int] = []

    @durable.step
    def step() -> Any:
        ran.append(1)
        return (i for i in range(2))

    @durable.workflow(store=store, run_id="ns")
    def workflow() -> None:
        step()

    for _ in range(2):
        with pytest.raises(durable.SerializationError, match="step"):
            workflow()
    assert len(ran) == 2


def test_dbos_nondeterministic_workflow(store: durable.Store, tmp_path: Any) -> None:
    """test_nondeterministic_workflow: a body that calls another step where
    the forked run recorded one is stopped with an unexpected-step error
    (DBOSUnexpectedStepError; durable's NondeterminismError)."""
    flag = tmp_path / "flag"
    flag.write_text("one")

    @durable.step
    def step_one() -> None:
        return

    @durable.step
    def step_two() -> None:
        return

    @durable.workflow(store=store, run_id="nd")
    def non_deterministic_workflow() -> None:
        if flag.read_text() == "one":
            step_one()
        else:
            step_two()
        durable.sleep(0)

    non_deterministic_workflow()
    flag.write_text("two")
    with pytest.raises(durable.NondeterminismError):
        non_deterministic_workflow.fork("nd", at=1)


# -- DBOS: tests/test_classdecorators.py --------------------------------------


class Counter:
    """Steps and workflows as methods, classmethods and staticmethods."""

    calls: list[str] = []  # noqa: RUF012

    def __init__(self, base: int) -> None:
        self.base = base

    @durable.step
    def add(self, x: int) -> int:
        Counter.calls.append(f"add{self.base}+{x}")
        return self.base + x

    @classmethod
    @durable.step
    def twice(cls, x: int) -> int:
        Counter.calls.append(f"twice{x}")
        return 2 * x

    @staticmethod
    @durable.step
    def square(x: int) -> int:
        Counter.calls.append(f"square{x}")
        return x * x


def test_dbos_methods_as_steps(store: durable.Store) -> None:
    """test_simple_workflow_class, test_classmethod_workflow,
    test_staticmethod_workflow: a method, a classmethod and a staticmethod
    step are recorded once; the instance is an argument of its step, so a
    resumed run whose instance changed is never served the old output. (A
    completed run is called again by its own arguments and code: an object
    its body captured counts by type there, as program state.)"""
    Counter.calls = []
    c = Counter(10)
    crash = [True]

    @durable.workflow(store=store, run_id="methods")
    def wf(x: int) -> int:
        total = c.add(x) + Counter.twice(x) + Counter.square(x)
        if crash and crash.pop():
            raise RuntimeError("crash after the steps")
        return total

    with pytest.raises(RuntimeError):
        wf(3)
    c.base = 20
    with pytest.raises(durable.DefinitionChangedError, match="add"):
        wf(3)
    c.base = 10
    assert wf(3) == 13 + 6 + 9 and wf(3) == 28
    assert Counter.calls == ["add10+3", "twice3", "square3"]


def test_dbos_workflow_as_instance_method(store: durable.Store) -> None:
    """test_simple_workflow_inst, test_inst_recovery: a workflow that is a
    method runs with its instance as its first argument, which counts as
    one (by its state): the same instance and arguments again replay its
    step, another instance is another run, and an explicit id returns the
    recorded result. (DBOS names an instance by its config_name; durable by
    its state. The body itself may run again on a completed run: the steps
    it reaches through `self` are checked as they replay.) Before, the
    instance was not bound: the call's first argument took its place."""
    steps: list[str] = []

    class Inst:
        def __init__(self, name: str) -> None:
            self.name = name

        @durable.step
        def test_step(self, var: str) -> str:
            steps.append(f"{self.name} {var}")
            return var

        @durable.workflow(store=store)
        def test_workflow(self, var: str, var2: str) -> str:
            return self.test_step(var) + var2

    inst = Inst("bob")
    first = inst.test_workflow.run("bob", "x")
    assert (first.value, first.steps_executed) == ("bobx", 1)
    assert inst.test_workflow("bob", "x") == "bobx"
    assert Inst.test_workflow(inst, "bob", "x") == "bobx"
    again = inst.test_workflow.run("bob", "x")
    assert (again.run_id, again.value, again.steps_executed) == (first.run_id, "bobx", 0)
    ann = Inst("ann").test_workflow.run("bob", "x")
    assert ann.value == "bobx" and ann.run_id != first.run_id
    fixed = inst.test_workflow.with_options(run_id="wfid")
    assert fixed("arg1", "!") == "arg1!" and fixed("arg1", "!") == "arg1!"
    assert steps == ["bob bob", "ann bob", "bob arg1"]
    with pytest.raises(TypeError, match="var2"):
        inst.test_workflow("only one")  # type: ignore[call-arg]
    assert "wfid" in {i.run_id for i in Inst.test_workflow.runs()}
    assert inst.test_workflow.resume("wfid").value == "arg1!" and len(steps) == 3
    assert copy.copy(inst.test_workflow)("bob", "x") == "bobx" and len(steps) == 3


def test_dbos_async_workflow_as_instance_method(store: durable.Store) -> None:
    """test_inst_async_recovery, test_inst_async_step_recovery: an async
    workflow method of an instance holding a lambda; its step ran once, and
    a resume through the instance replays it."""
    ran: list[int] = []

    class TestClass:
        def __init__(self, multiplier: int) -> None:
            self.multiply = lambda x: x * multiplier

        @durable.step
        async def step(self, x: int) -> int:
            ran.append(x)
            return int(self.multiply(x))

        @durable.workflow(store=store, run_id="inst-async")
        async def workflow(self, x: int) -> int:
            return await self.step(x)

    inst = TestClass(5)
    assert asyncio.run(inst.workflow(2)) == 10
    assert asyncio.run(inst.workflow(2)) == 10
    assert asyncio.run(inst.workflow.resume("inst-async")).value == 10
    assert ran == [2]


# -- joblib: joblib/test/test_memory.py ---------------------------------------


def test_joblib_identity_lazy_with_kwargs(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_integration, test_memory_kwarg, test_memory_args_as_kwargs
    (check_identity_lazy): a cached function runs once per distinct bound
    call; defaults and keywords bind to the same call."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    accumulator: list[int] = []

    @durable.step(cache=True)
    def g(arg1: Any = None, arg2: int = 1) -> Any:
        accumulator.append(1)
        return arg1

    for i in range(3):
        for _ in range(2):
            assert g(i) == i
            assert g(arg1=i) == i
            assert g(i, 1) == i
    assert len(accumulator) == 3
    assert g() is None and g(None, arg2=1) is None and len(accumulator) == 4
    assert g(arg1=30, arg2=2) == 30 and len(accumulator) == 5


def test_joblib_lambda_collisions(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_warning_lambda_collisions, test_memory_lambda: two cached
    lambdas never share entries (joblib warns of a collision)."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    a = durable.step(cache=True, name="lam")(lambda x: x)
    b = durable.step(cache=True, name="lam")(lambda x: x + 1)
    assert a(0) == 0
    assert b(1) == 2
    assert a(1) == 1
    assert b(0) == 1


def test_joblib_two_lambdas_on_one_line(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_warning_lambda_collisions with both lambdas on one line,
    where their source cannot be told apart by line: unnamed, they are
    refused (joblib warns of a collision); named, they never share an entry."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    with pytest.raises(durable.ConfigurationError, match="cannot be told apart"):
        durable.step(cache=True)(lambda x: x), durable.step(cache=True)(lambda x: x + 1)
    a, b = durable.step(cache=True, name="la")(lambda x: x), durable.step(cache=True, name="lb")(lambda x: x + 1)  # fmt: skip
    assert (a(1), b(1), a(1), b(1)) == (1, 2, 1, 2)


def test_joblib_exception_is_not_cached(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_exception: a call that raises raises every time (its
    body runs every time), and does not spoil the entry of another call."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    class MyException(Exception):
        pass

    @durable.step(cache=True)
    def h(exc: int = 0) -> None:
        ran.append(exc)
        if exc:
            raise MyException

    h()
    for _ in range(3):
        with pytest.raises(MyException):
            h(1)
    h()
    assert ran == [0, 1, 1, 1]


def test_joblib_ignore(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_ignore, test_memory_ignore_decorated: an ignored argument
    is not part of the key, also through a functools.wraps decorator."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    accumulator: list[int] = []

    def decorate(f: Any) -> Any:
        @functools.wraps(f)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return f(*args, **kwargs)

        return wrapped

    @durable.step(cache=durable.Cache(ignore=("y",)))
    def z(x: int, y: int = 1) -> None:
        accumulator.append(1)

    @durable.step(cache=durable.Cache(ignore=("y",)))
    @decorate
    def zd(x: int, y: int = 1) -> None:
        accumulator.append(2)

    for fn in (z, zd):
        fn(0, y=1)
        fn(0, y=1)
        fn(0, y=2)
        fn(0)
    assert accumulator == [1, 2]


def test_joblib_kwonly_args(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_func_with_kwonly_args: a keyword-only argument given by
    position is an error before anything runs, cached entry or not; an
    ignored keyword-only argument does not count."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    def func_with_kwonly_args(
        a: int, b: int, *, kw1: Any = "kw1", kw2: Any = "kw2"
    ) -> tuple[Any, ...]:
        ran.append(1)
        return a, b, kw1, kw2

    cached = durable.step(cache=True)(func_with_kwonly_args)
    assert cached(1, 2, kw1=3) == (1, 2, 3, "kw2")
    with pytest.raises(TypeError):
        cached(1, 2, 3, kw2=4)  # type: ignore[misc]
    cached(1, 2, kw1=3, kw2=4)
    with pytest.raises(TypeError):
        cached(1, 2, 3, kw2=4)  # type: ignore[misc]
    assert len(ran) == 2
    ignoring = durable.step(cache=durable.Cache(ignore=("kw2",)), name="ign")(func_with_kwonly_args)
    assert ignoring(1, 2, kw1=3, kw2=4) == (1, 2, 3, 4)
    assert ignoring(1, 2, kw1=3, kw2="ignored") == (1, 2, 3, 4)
    assert len(ran) == 3


def test_joblib_argument_change(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_argument_change: a function that changes its (default) argument
    is called with the changed value next time, and computes again."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))

    @durable.step(cache=True)
    def count_and_append(x: list[Any] = []) -> int:  # noqa: B006
        len_x = len(x)
        x.append(None)
        return len_x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert count_and_append() == 0
        assert count_and_append() == 1


def test_joblib_function_code_change(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_in_memory_function_code_change: a function whose
    __code__ is replaced after decoration is not served the old output."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))

    def _sum(x: int, y: int) -> int:
        return x + y

    def _product(x: int, y: int) -> int:
        return x * y

    def function_to_cache(x: int, y: int) -> int:
        return x + y

    f = durable.step(cache=True)(function_to_cache)
    assert f(1, 2) == 3 and f(1, 2) == 3
    function_to_cache.__code__ = _product.__code__
    assert f(1, 2) == 2 and f(1, 2) == 2
    function_to_cache.__code__ = _sum.__code__
    assert f(1, 2) == 3


def test_joblib_code_change_in_a_run(store: durable.Store) -> None:
    """test_memory_in_memory_function_code_change, inside a run: a step
    whose __code__ was replaced after the run recorded it is a changed call,
    never replayed."""
    ran: list[str] = []

    def _product(x: int, y: int) -> int:
        ran.append("product")
        return x * y

    def combine(x: int, y: int) -> int:
        ran.append("sum")
        return x + y

    step = durable.step(combine)

    @durable.workflow(store=store, run_id="code")
    def wf() -> int:
        return step(1, 2)

    assert wf() == 3
    combine.__code__ = _product.__code__
    with pytest.raises(durable.DefinitionChangedError):
        wf()
    assert wf.with_options(on_change="rerun")() == 2
    assert ran == ["sum", "product"]


# -- Prefect: tests/test_cache_policies.py, tests/test_tasks.py ---------------


def test_prefect_inputs_key_varies_and_excludes(
    local_store: durable.Store, monkeypatch: Any
) -> None:
    """TestInputsPolicy.test_key_varies_on_inputs / _excludes_excluded_inputs:
    calls with other inputs compute; an excluded input does not count."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[Any] = []

    @durable.step(cache=durable.Cache(ignore=("y",)))
    def task(x: Any = None, y: Any = None) -> Any:
        ran.append((x, y))
        return x

    task(x=42)
    for val in (42, "foo", None):
        task(x=42, y=val)
    task(x="foo")
    task(x={"a": 1})
    task(x={"a": 2})
    assert [x for x, _ in ran] == [42, "foo", {"a": 1}, {"a": 2}]


def test_prefect_changing_the_source_busts_the_cache(
    local_store: durable.Store, monkeypatch: Any
) -> None:
    """TestTaskSourcePolicy.test_changes_in_def_change_key,
    TestDefaultPolicy.test_changing_the_source_busts_the_cache: a
    redefinition with another body or another parameter computes again; one
    that only changes a docstring does not."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True, name="t")
    def my_func(x: int) -> int:
        ran.append("v1")
        return x

    assert my_func(2) == 2

    @durable.step(cache=True, name="t")  # type: ignore[no-redef]
    def my_func(x: int) -> int:
        """Only a docstring."""
        ran.append("v1")
        return x

    assert my_func(2) == 2

    @durable.step(cache=True, name="t")  # type: ignore[no-redef]
    def my_func(x: int) -> int:
        ran.append("v2")
        return x * 10

    assert my_func(2) == 20

    @durable.step(cache=True, name="t")  # type: ignore[no-redef]
    def my_func(x: int, y: int = 0) -> int:
        ran.append("v2")
        return x * 10

    assert my_func(2) == 20
    assert ran == ["v1", "v2", "v2"]


def test_prefect_cache_hits_between_flows(store: durable.Store) -> None:
    """test_cache_hits_between_flows_are_cached: a cached task called by two
    flow runs (here two workflows) computes once."""
    ran: list[int] = []

    @durable.step(cache=True)
    def task(x: int) -> int:
        ran.append(x)
        return x + 1

    @durable.workflow(store=store)
    def flow_a(x: int) -> int:
        return task(x)

    @durable.workflow(store=store)
    def flow_b(x: int) -> int:
        return task(x)

    assert flow_a(1) == 2 and flow_b(1) == 2 and flow_a.run(2).value == 3
    assert ran == [1, 2]


class Foo:
    def __init__(self, x: int) -> None:
        self.x = x

    @durable.step(cache=True)
    def add(self, a: int) -> int:
        Foo.ran.append((self.x, a))
        return a + self.x

    @durable.step(cache=durable.Cache(key=lambda self, a: a))
    def shared(self, a: int) -> int:
        Foo.ran.append((self.x, a))
        return a + self.x

    ran: list[tuple[int, int]] = []  # noqa: RUF012


def twice_each(store: durable.Store, method: str, f1: Foo, f2: Foo) -> tuple[int, ...]:
    """A run calling the cached method twice on each instance, with 5
    (`Foo.ran` starts empty)."""
    Foo.ran = []

    @durable.workflow(store=store)
    def bar() -> tuple[int, ...]:
        one, two = getattr(f1, method), getattr(f2, method)
        return one(5), one(5), two(5), two(5)

    return bar()


def test_prefect_cache_key_receives_self(
    store: durable.Store, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cache_key_fn_receives_self_if_method: two instances do not share
    a cache; each computes once. A changed instance computes again."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))  # the plain call's store
    f1, f2 = Foo(1), Foo(100)
    assert twice_each(store, "add", f1, f2) == (6, 6, 105, 105)
    assert Foo.ran == [(1, 5), (100, 5)]
    f1.x = 2
    assert f1.add(5) == 7


def test_prefect_instance_methods_can_share_a_cache(store: durable.Store) -> None:
    """test_instance_methods_can_share_a_cache: a key function that leaves
    self out makes every instance share the entry."""
    assert twice_each(store, "shared", Foo(1), Foo(100)) == (6, 6, 6, 6)
    assert Foo.ran == [(1, 5)]


# -- LangGraph: interrupts, resume, update_state, time travel ----------------


def test_langgraph_interrupt_then_resume_with_answer(store: durable.Store) -> None:
    """test_interrupt_multiple / test_multiple_interrupts_in_one_node: a node
    that interrupts twice is resumed with one answer at a time; the work
    before each interrupt is not done again (LangGraph re-runs the node from
    its start; durable replays its recorded steps)."""
    ran: list[str] = []

    @durable.step
    def prepare(topic: str) -> str:
        ran.append("prepare")
        return topic.upper()

    @durable.workflow(store=store, run_id="hitl")
    def graph(topic: str) -> str:
        text = prepare(topic)
        first = durable.wait_for("first")
        second = durable.wait_for("second")
        return f"{text}:{first}:{second}"

    with pytest.raises(durable.Suspended, match="first"):
        graph("owls")
    with pytest.raises(durable.Suspended, match="second"):
        graph.resume("hitl", inputs={"first": "a"})
    run = graph.resume("hitl", inputs={"second": "b"})
    assert (run.value, run.steps_replayed, run.steps_executed) == ("OWLS:a:b", 2, 1)
    assert ran == ["prepare"]
    assert graph("owls") == "OWLS:a:b"


def test_langgraph_parallel_interrupts(store: durable.Store) -> None:
    """test_parallel_interrupts: two branches running at once each
    interrupt; one resume answering both finishes the run, and the branch
    work before the interrupts ran once."""
    ran: list[str] = []

    @durable.step
    async def work(name: str) -> str:
        ran.append(name)
        return name

    async def branch(name: str) -> str:
        done = await work(name)
        return done + "=" + str(durable.wait_for(name))

    @durable.workflow(store=store, run_id="par")
    async def graph() -> list[str]:
        return list(await asyncio.gather(branch("a"), branch("b")))

    with pytest.raises(durable.Suspended):
        asyncio.run(graph())
    run = asyncio.run(graph.resume("par", inputs={"a": 1, "b": 2}))
    assert run.value == ["a=1", "b=2"]
    assert sorted(ran) == ["a", "b"]


def test_langgraph_update_state_then_continue(store: durable.Store) -> None:
    """test_update_state / fork from a checkpoint: a fork that changes the
    value recorded at a position runs what follows with it; what came before
    is replayed, and the source run keeps its value."""
    ran: list[str] = []

    @durable.step
    def node_a(x: int) -> int:
        ran.append("a")
        return x + 1

    @durable.step
    def node_b(y: int) -> int:
        ran.append("b")
        return y * 10

    @durable.step
    def node_c(z: int) -> int:
        ran.append("c")
        return z - 1

    @durable.workflow(store=store, run_id="src")
    def graph(x: int) -> int:
        return node_c(node_b(node_a(x)))

    assert graph(1) == 19
    forked = graph.fork("src", at=2, new_run_id="edited", mutate=lambda y: 5)
    assert (forked.value, forked.steps_replayed, forked.steps_executed) == (4, 2, 1)
    assert ran == ["a", "b", "c", "c"]
    assert graph(1) == 19
    again = graph.fork("src", at=0, new_run_id="replay", x=2)
    assert again.value == 29 and ran == ["a", "b", "c", "c", "a", "b", "c"]


# -- DBOS: tests/test_concurrency.py ------------------------------------------


def test_dbos_concurrent_calls_of_one_id_execute_once(store: durable.Store) -> None:
    """test_concurrent_workflows (one id started twice at once): the run
    executes once; the second caller, told to wait, gets its value."""
    entered = threading.Event()
    release = threading.Event()
    ran: list[int] = []

    @durable.step
    def slow() -> int:
        ran.append(1)
        entered.set()
        release.wait()
        return 7

    @durable.workflow(store=store, run_id="same")
    def wf() -> int:
        return slow()

    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(wf()))
    first.start()
    assert entered.wait(10)
    with pytest.raises(durable.RunLockedError):
        wf()
    second = threading.Thread(target=lambda: results.append(wf.with_options(wait=30)()))
    second.start()
    release.set()
    first.join()
    second.join()
    assert results == [7, 7] and ran == [1]


def test_langgraph_interrupt_inside_a_task(store: durable.Store) -> None:
    """test_task_before_interrupt_resume: a task run before the interrupts,
    then one interrupt per topic, each raised inside a task; resumed one
    answer at a time. The setup task ran once."""
    ran: list[int] = []

    @durable.step
    def setup(n: int) -> int:
        ran.append(n)
        return n

    @durable.workflow(store=store, run_id="topics")
    def workflow(number_of_topics: int) -> dict[str, list[str]]:
        n = setup(number_of_topics)
        answers = []
        for i in range(n):
            answers.append(str(durable.wait_for(f"topic {i + 1}")))
        return {"answers": answers}

    with pytest.raises(durable.Suspended, match="topic 1"):
        workflow(2)
    with pytest.raises(durable.Suspended, match="topic 2"):
        workflow.resume("topics", inputs={"topic 1": "answer1"})
    run = workflow.resume("topics", inputs={"topic 2": "answer2"})
    assert run.value == {"answers": ["answer1", "answer2"]} and ran == [2]


def test_langgraph_falsy_return_from_task(store: durable.Store) -> None:
    """test_falsy_return_from_task: a task that returned False before an
    interrupt is replayed as False on resume, not run again."""
    ran: list[int] = []

    @durable.step
    def falsy_task() -> bool:
        ran.append(1)
        return False

    @durable.workflow(store=store, run_id="falsy")
    def graph(state: dict[str, Any]) -> Any:
        assert falsy_task() is False
        return durable.wait_for("test")

    with pytest.raises(durable.Suspended):
        graph({})
    assert graph.resume("falsy", inputs={"test": 0}).value == 0
    assert ran == [1]


def test_langgraph_checkpoint_recovery(store: durable.Store) -> None:
    """test_checkpoint_recovery: a node that fails leaves the run at that
    node with the error in its history; invoking it again with an updated
    input continues from there (LangGraph merges the new input into the
    saved state; durable: a resume overriding the argument, which no
    finished position used yet)."""
    ran: list[str] = []

    @durable.step
    def start(steps: list[str]) -> list[str]:
        ran.append("start")
        return [*steps]

    @durable.step
    def failing_node(steps: list[str], attempt: int) -> list[str]:
        ran.append(f"node1:{attempt}")
        if attempt == 1:
            raise RuntimeError("Simulated failure")
        return [*steps, "node1"]

    @durable.step
    def second_node(steps: list[str]) -> list[str]:
        ran.append("node2")
        return [*steps, "node2"]

    @durable.workflow(store=store, run_id="thread-1")
    def graph(steps: list[str], attempt: int) -> list[str]:
        return second_node(failing_node(start(steps), attempt))

    with pytest.raises(RuntimeError, match="Simulated failure"):
        graph(["start"], 1)
    (info,) = graph.runs()
    assert (info.status, info.position, info.error) == (
        "failed",
        1,
        "RuntimeError: Simulated failure",
    )
    run = graph.resume("thread-1", attempt=2)
    assert run.value == ["start", "node1", "node2"]
    assert ran == ["start", "node1:1", "node1:2", "node2"]
    graph.delete("thread-1")  # delete_thread: nothing of the run is left
    assert graph.runs() == []
    with pytest.raises(durable.RunNotFoundError):
        graph.history("thread-1")
    assert graph(["start"], 2) == ["start", "node1", "node2"]
    assert ran[4:] == ["start", "node1:2", "node2"]


RECOVERY = NOTE_HEAD + """

@durable.step
def transaction(var2: str) -> str:
    note("txn")
    return var2 + "1"

@durable.step
def return_none() -> None:
    note("none")

@durable.workflow(run_id="recovery")
def test_workflow(var: str, var2: str) -> str:
    note("wf")
    res = transaction(var2)
    assert return_none() is None
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return res + var

run = test_workflow.run("bob", "bob")
print(run.value, run.steps_replayed, run.steps_executed)
"""


def test_dbos_recovery_after_kill_9(tmp_path: Any, child_env: dict[str, str]) -> None:
    """test_recovery_workflow with a real crash: the process is killed with
    SIGKILL after its steps; the next process runs the body again and
    replays both steps, one of which returned None."""
    import subprocess
    import sys

    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(RECOVERY)
    crashed = subprocess.run(
        [sys.executable, str(script), str(log)],
        env=dict(child_env, CRASH="1"),
        capture_output=True,
        text=True,
    )
    assert crashed.returncode == -9
    done = subprocess.run(
        [sys.executable, str(script), str(log)], env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["bob1bob", "2", "0"]
    assert log.read_text().split() == ["wf", "txn", "none", "wf"]


def test_dbos_workflow_as_classmethod_and_staticmethod(store: durable.Store) -> None:
    """test_simple_workflow_class, test_simple_workflow_static: a workflow
    under @classmethod or @staticmethod, each run once per id."""
    ran: list[str] = []

    class K:
        @classmethod
        @durable.workflow(store=store, run_id="cls")
        def cls_wf(cls, var: str) -> str:
            ran.append("cls")
            return cls.__name__ + var

        @staticmethod
        @durable.workflow(store=store, run_id="static")
        def static_wf(var: str) -> str:
            ran.append("static")
            return var

    assert K.cls_wf("x") == "Kx" and K.cls_wf("x") == "Kx"
    assert K.static_wf("y") == "y" and K().static_wf("y") == "y"
    assert ran == ["cls", "static"]


def test_prefect_cache_expiration(local_store: durable.Store, monkeypatch: Any, clock: Any) -> None:
    """test_cache_key_hits_with_future_expiration_are_cached,
    test_cache_key_hits_with_past_expiration_are_not_cached: an entry is
    reused until it expires, then computed (and kept) again."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=durable.Cache(expire=60))
    def task(x: int) -> int:
        ran.append(x)
        return x

    assert task(1) == 1
    clock.now += 59
    assert task(1) == 1 and ran == [1]
    clock.now += 2
    assert task(1) == 1 and ran == [1, 1]
    assert task(1) == 1 and ran == [1, 1]


def test_dbos_sleep_is_durable(store: durable.Store, clock: Any) -> None:
    """test_sleep: a workflow's sleep is recorded; the same id again does
    not sleep. A run stopped during its sleep (Ctrl-C 4 s into it) sleeps
    only what is left when it is called again."""

    @durable.workflow(store=store)
    def wf(secs: float) -> str:
        durable.sleep(secs)
        run = durable.current_run()
        assert run is not None
        return run.run_id

    sleep_uuid = wf(1.5)
    assert wf.with_options(run_id=sleep_uuid)(1.5) == sleep_uuid
    assert clock.slept == [1.5]

    def interrupted(seconds: float) -> None:
        clock.slept.append(seconds)
        clock.now += 4
        raise KeyboardInterrupt

    clock.sleep = interrupted
    with pytest.raises(KeyboardInterrupt):
        wf.with_options(run_id="stopped")(10.0)
    del clock.sleep
    assert wf.with_options(run_id="stopped")(10.0) == "stopped"
    assert clock.slept == [1.5, 10.0, 6.0]


def test_dbos_workflow_wrapped_by_custom_decorator(store: durable.Store) -> None:
    """test_workflow_wrapped_by_custom_decorator: @workflow on top of a
    user's functools.wraps decorator runs the decorator's hooks on every
    call that runs the body, a recovery included; the step inside ran once."""
    counts = {"before": 0, "after": 0, "error": 0}
    ran: list[str] = []
    fail = [True]

    def task_meta(description: str) -> Any:
        def decorator(func: Any) -> Any:
            @functools.wraps(func)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                counts["before"] += 1
                try:
                    result = await func(*args, **kwargs)
                except Exception:
                    counts["error"] += 1
                    raise
                counts["after"] += 1
                return result

            return wrapper

        return decorator

    @durable.step
    async def helper_step(var: str) -> str:
        ran.append(var)
        return var + "!"

    @durable.workflow(store=store, name="wrapped_workflow", run_id="w")
    @task_meta(description="wrapped_workflow")
    async def wrapped_workflow(var: str) -> str:
        done = await helper_step(var)
        if fail and fail.pop():
            raise RuntimeError("crash after the step")
        return done

    with pytest.raises(RuntimeError):
        asyncio.run(wrapped_workflow("hello"))
    assert asyncio.run(wrapped_workflow("hello")) == "hello!"
    assert asyncio.run(wrapped_workflow("hello")) == "hello!"
    assert counts == {"before": 2, "after": 1, "error": 1} and ran == ["hello"]


def test_joblib_memory_numpy(local_store: durable.Store, monkeypatch: Any) -> None:
    """test_memory_numpy: arrays count by content; each new array computes
    once and its hits come back equal, of the same dtype and shape."""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    accumulator: list[int] = []

    @durable.step(cache=True)
    def n(arg: Any = None) -> Any:
        accumulator.append(1)
        return arg

    rnd = np.random.RandomState(0)
    for i in range(3):
        a = rnd.random_sample((10, 10))
        for _ in range(3):
            out = n(a)
            assert out.dtype == a.dtype and out.shape == a.shape and np.all(out == a)
            assert len(accumulator) == i + 1
    assert n(a.astype(np.float32)).dtype == np.float32 and len(accumulator) == 4


def test_joblib_persistence(local_store: durable.Store, monkeypatch: Any, tmp_path: Any) -> None:
    """test_persistence: a cached function pickled and loaded again. By
    reference it is the same step and hits; by value (as a worker gets a
    local function) its source cannot be read, so it runs without the cache,
    with a warning, where joblib hits: never a value for code it cannot see."""
    import pickle

    import cloudpickle

    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    log = tmp_path / "ran"

    @durable.step(cache=True)
    def g(x: int) -> int:
        with open(log, "a") as f:
            f.write(f"{x}\n")
        return x * 2

    assert g(1) == 2 and g(1) == 2
    before = len(SQUARED)
    assert pickle.loads(pickle.dumps(square_cached))(3) == 9
    assert pickle.loads(pickle.dumps(square_cached))(3) == 9
    assert len(SQUARED) == before + 1
    h = cloudpickle.loads(cloudpickle.dumps(g))
    with pytest.warns(UserWarning, match="ran without its cache"):
        assert h(1) == 2
    assert log.read_text().split() == ["1", "1"]


@durable.step(cache=True)
def square_cached(x: int) -> int:
    SQUARED.append(x)
    return x * x


SQUARED: list[int] = []


def test_joblib_parallel_calls_of_one_entry(store: durable.Store) -> None:
    """test_cached_function_race_condition_when_persisting_output: several
    threads computing the same entry at once all get a complete value, and
    later calls hit it."""
    from concurrent.futures import ThreadPoolExecutor

    ran: list[int] = []

    @durable.step(cache=True)
    def fast_func_with_complex_output(i: int) -> dict[str, list[int]]:
        ran.append(i)
        return {"out": list(range(1000))}

    @durable.workflow(store=store, run_id="race")
    def wf() -> list[dict[str, list[int]]]:
        with ThreadPoolExecutor(2) as pool:
            return durable.loop_over(fast_func_with_complex_output, [0] * 3, executor=pool)

    assert wf() == [{"out": list(range(1000))}] * 3
    assert 1 <= len(ran) <= 3
    done = len(ran)
    assert wf.with_options(run_id="race2")() == [{"out": list(range(1000))}] * 3
    assert len(ran) == done


def test_langgraph_multiple_interrupts_functional_cache(store: durable.Store) -> None:
    """test_multiple_interrupts_functional_cache: a cached task between
    interrupts of one name, resumed answer by answer: the task computes once
    per input in the first run (3 times) and not at all in a second run."""
    counter = 0

    @durable.step(cache=True)
    def double(x: int) -> int:
        nonlocal counter
        counter += 1
        return 2 * x

    @durable.workflow(store=store)
    def graph(state: dict[str, Any]) -> dict[str, list[Any]]:
        values: list[Any] = []
        for idx in [1, 1, 2, 2, 3, 3]:
            values.extend([double(idx), durable.wait_for("a")])
        return {"values": values}

    expected = {"values": [2, "a", 2, "b", 4, "c", 4, "d", 6, "e", 6, "f"]}
    for thread in ("t1", "t2"):
        with pytest.raises(durable.Suspended):
            graph.with_options(run_id=thread)({})
        for answer in "abcde":
            with pytest.raises(durable.Suspended):
                graph.resume(thread, inputs={"a": answer})
        assert graph.resume(thread, inputs={"a": "f"}).value == expected
        assert counter == 3


def test_dbos_asyncio_wait_all_completed_then_fork(store: durable.Store) -> None:
    """test_asyncio_wait_all_completed: steps awaited through asyncio.wait
    each run once; a fork from after the last of them replays both (DBOS
    forks from step 100; durable's `at` stops at the first unfinished
    position, here 2)."""
    ran: list[str] = []

    @durable.step
    async def my_step(val: str) -> str:
        ran.append(val)
        return val

    @durable.workflow(store=store, run_id="wait")
    async def wait_all_workflow() -> list[str]:
        tasks = [asyncio.ensure_future(my_step("a")), asyncio.ensure_future(my_step("b"))]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.ALL_COMPLETED)
        assert len(done) == 2 and not pending
        return sorted(t.result() for t in done)

    assert asyncio.run(wait_all_workflow()) == ["a", "b"]
    forked = asyncio.run(wait_all_workflow.fork("wait", at=2))
    assert (forked.value, forked.steps_replayed, forked.steps_executed) == (["a", "b"], 2, 0)
    assert sorted(ran) == ["a", "b"]


def test_dbos_fork_past_a_failed_position_names_it(store: durable.Store) -> None:
    """test_asyncio_wait_first_exception's fork from a high step: the body
    handled a failed step and completed. A failed step is not an outcome in
    durable, so the run can be forked at 0 only; the refusal names the
    position that is not finished, not a range "0..-1"."""
    ran: list[str] = []

    @durable.step
    async def error_step() -> str:
        ran.append("err")
        raise ValueError("boom")

    @durable.step
    async def slow_step(val: str) -> str:
        ran.append(val)
        return val

    @durable.workflow(store=store, run_id="first-exception")
    async def wait_exception_workflow() -> list[str]:
        tasks = [asyncio.ensure_future(error_step()), asyncio.ensure_future(slow_step("ok"))]
        done, _ = await asyncio.wait(tasks)
        return sorted(repr(t.exception()) if t.exception() else t.result() for t in done)

    assert asyncio.run(wait_exception_workflow()) == ["ValueError('boom')", "ok"]
    with pytest.raises(durable.ConfigurationError) as refused:
        asyncio.run(wait_exception_workflow.fork("first-exception", at=2))
    assert "0..-1" not in str(refused.value)
    assert "position 0 of run 'first-exception' is not finished" in str(refused.value)
    forked = asyncio.run(wait_exception_workflow.fork("first-exception", at=0))
    assert forked.value == ["ValueError('boom')", "ok"]
    assert ran == ["err", "ok", "err", "ok"]


def test_langgraph_interrupt_subgraph(store: durable.Store) -> None:
    """test_interrupt_subgraph, test_subgraph_checkpoint_true_interrupt: an
    interrupt inside a subgraph (a child workflow) suspends the parent; the
    answer given to the parent's resume reaches the child, and the parent's
    node before the subgraph ran once."""
    ran: list[str] = []

    @durable.step
    def foo(baz: str) -> str:
        ran.append("foo")
        return "foo"

    @durable.workflow(store=store)
    def child(baz: str) -> str:
        ran.append("child body")
        return str(durable.wait_for("baz"))

    @durable.workflow(store=store, run_id="graph")
    def graph(baz: str) -> str:
        return child(foo(baz))

    with pytest.raises(durable.Suspended, match="baz"):
        graph("")
    run = graph.resume("graph", inputs={"baz": "bar"})
    assert run.value == "bar" and ran == ["foo", "child body", "child body"]
    assert graph("") == "bar" and ran.count("foo") == 1


def test_prefect_cached_task_with_retries(
    local_store: durable.Store, monkeypatch: Any, clock: Any, tmp_path: Any
) -> None:
    """test_tasks.py TestTaskRetries with a cache policy: a cached task that
    fails, then succeeds on a retry, stores the successful result only; the
    next call hits it, inside a run or not. The run's history counts the
    tries. (Attempts are counted in a file: a list the step reads would be
    captured state, part of its cache key.)"""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    log = tmp_path / "tries"

    @durable.step(cache=True, retries=2, retry_delay=1.0)
    def flaky(x: int) -> int:
        with open(log, "a") as f:
            f.write("try\n")
        if len(log.read_text().split()) < 3:
            raise ValueError("not yet")
        return x * 10

    @durable.workflow(store=local_store, run_id="flaky")
    def flow(x: int) -> int:
        return flaky(x)

    assert flow(1) == 10 and clock.slept == [1.0, 2.0]
    (step,) = [s for s in flow.history("flaky") if s.position == 0]
    assert step.attempts == 3 and [f.message for f in step.failures] == ["not yet"] * 2
    assert flaky(1) == 10 and flow.with_options(run_id="again")(1) == 10
    assert len(log.read_text().split()) == 3
