"""A ninth round of the peers' own test cases, about identity and replay:
DBOS Transact (tests/test_dbos.py, test_workflow_management.py: recovery
and forks after an edit, steps made in the body) and Prefect
(tests/test_tasks.py: task_input_hash within and between flows, over
objects, after the code is swapped). The rest of the round is in
tests/test_peer_ports_ninth_more.py and tests/test_peer_ports_ninth_state.py;
earlier rounds in test_peer_ports*.py.

Each test names the peer test it ports and, where durable differs on
purpose, says how. Executions are counted by the step bodies themselves."""

from __future__ import annotations

from typing import Any

import pytest

import durable

# -- DBOS: tests/test_dbos.py ---------------------------------------------------


def test_dbos_recovery_appversion(store: durable.Store) -> None:
    """test_recovery_appversion: a pending run is recovered by the same
    application, and not by one whose workflow changed (x -> x + 1). durable
    keys on the code's fingerprint instead of an application version:
    `recover()` of the edited workflow executes nothing and reports the run
    refused; the unedited one then finishes it, running the step once more."""
    ran: list[int] = []
    crash = {"now": True}

    def make(delta: int) -> durable.Workflow[[int], int]:
        @durable.step
        def double(x: int) -> int:
            ran.append(x)
            if crash["now"]:
                raise RuntimeError("the machine went away")
            return 2 * x + delta

        @durable.step
        def take(x: int) -> int:
            return x

        @durable.workflow(store=store, name="test_workflow")
        def test_workflow(x: int) -> int:
            # take() recorded: the run is this code's (one that recorded nothing has
            # nothing to be stale about, and runs with the edited code)
            return double(take(x))

        return test_workflow

    original, edited = make(0), make(1)
    with pytest.raises(RuntimeError):
        original.with_options(run_id="wf")(5)
    crash["now"] = False
    [refused] = edited.recover()
    assert refused.status == "failed" and "DefinitionChangedError" in str(refused.error)
    assert ran == [5] and [r.status for r in original.runs()] == ["failed"]
    [recovered] = original.recover()
    assert (recovered.status, recovered.value, ran) == ("completed", 10, [5, 5])
    assert original.recover() == []


def test_dbos_run_step_made_in_the_body(store: durable.Store) -> None:
    """test_run_step: functions run as steps from the body (DBOS.run_step(
    {"name": "concat"}, lambda: res1 + res2)): `durable.step(name=...)(fn)()`.
    Each is recorded under its name; the same run again replays all three,
    and a run stopped before the lambda runs only the lambda on resume."""
    ran: list[str] = []
    stop = {"before_concat": True}

    def test_step(var: str, sn: int) -> str:
        ran.append(f"step {sn}")
        assert durable.current_run() is not None
        return var

    @durable.workflow(store=store)
    def test_workflow(var: str, var2: str) -> str:
        res1 = durable.step(test_step)(var, 1)
        res2 = durable.step(name="test_step")(test_step)(var2, 2)
        if stop["before_concat"]:
            raise KeyboardInterrupt
        res3 = durable.step(name="concat")(lambda: res1 + res2)()
        return res1 + res2 + res3

    with pytest.raises(KeyboardInterrupt):
        test_workflow.with_options(run_id="wf")("bob", "joe")
    stop["before_concat"] = False
    assert test_workflow.resume("wf").value == "bobjoebobjoe"
    assert test_workflow.with_options(run_id="wf")("bob", "joe") == "bobjoebobjoe"
    names = [s.name for s in test_workflow.history("wf") if s.kind == "step"]
    assert names[1:] == ["test_step", "concat"] and names[0].endswith("test_step")
    assert ran == ["step 1", "step 2"]


def test_dbos_fork_version(store: durable.Store) -> None:
    """test_fork_version: a completed run forked from its second step by a
    new application version completes, stepOne not run again. durable keys
    on code, not a version label: a fork by edited code is refused as any
    resume is (managing-runs.md); under on_change="rerun" it replays what is
    unchanged and runs the rest by the new code, and a fork past an edited
    stepOne runs stepOne again rather than keep its copied output."""
    counts = {"one": 0, "two": 0}

    def make(one_adds: int, two_adds: int) -> durable.Workflow[[int], int]:
        @durable.step
        def step_one(x: int) -> int:
            counts["one"] += 1
            return x + one_adds

        @durable.step
        def step_two(x: int) -> int:
            counts["two"] += 1
            return x + two_adds

        @durable.workflow(store=store, name="simple_workflow")
        def simple_workflow(x: int) -> int:
            return step_one(x) + step_two(x)

        return simple_workflow

    original, new_two, new_one = make(1, 2), make(1, 20), make(10, 2)
    assert original.with_options(run_id="wf")(1) == 5 and counts == {"one": 1, "two": 1}
    with pytest.raises(durable.DefinitionChangedError):
        new_two.fork("wf", at=1)
    assert counts == {"one": 1, "two": 1}
    run = new_two.with_options(on_change="rerun").fork("wf", at=1)
    assert (run.value, counts) == (23, {"one": 1, "two": 2})
    run = new_one.with_options(on_change="rerun").fork("wf", at=1)
    assert (run.value, counts) == (14, {"one": 2, "two": 3})
    assert original.with_options(run_id="wf")(1) == 5 and counts == {"one": 2, "two": 3}


# -- Prefect: tests/test_tasks.py TestCacheFunctionBuiltins --------------------


def test_prefect_task_input_hash_within_and_between_flows(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_task_input_hash_within_flows, _between_flows: foo(1), foo(2),
    foo(1) in one flow: the third is cached; bar(1), bar(2), bar(1) as three
    flows: the third's task is cached. The hit still takes its position in
    the run, so the run's record replays it like any step."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=True)
    def foo(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=local_store)
    def within() -> list[int]:
        return [foo(1), foo(2), foo(1)]

    @durable.workflow(store=local_store)
    def between(x: int) -> int:
        return foo(x)

    assert within() == [1, 2, 1] and ran == [1, 2]
    assert [between(1), between(2), between(1)] == [1, 2, 1] and ran == [1, 2]
    assert between.with_options(run_id="third")(1) == 1 and ran == [1, 2]
    assert [s.kind for s in between.history("third") if s.position >= 0] == ["step"]
    assert durable.cache_info(foo).misses == 2 and durable.cache_info(foo).entries == 2


def test_prefect_task_input_hash_over_objects(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_task_input_hash_works_with_object_input_types, _object_return_
    types: instances of a local class with equal state hit, another state
    computes; a returned object comes back equal (not the same object)."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    class TestClass:
        def __init__(self, x: int) -> None:
            self.x = x

        def __eq__(self, other: object) -> bool:
            return type(self) is type(other) and self.x == getattr(other, "x", None)

    @durable.step(cache=True)
    def read(instance: TestClass) -> int:
        ran.append(instance.x)
        return instance.x

    @durable.step(cache=True)
    def make(x: int) -> TestClass:
        ran.append(-x)
        return TestClass(x)

    assert [read(TestClass(1)), read(TestClass(2)), read(TestClass(1))] == [1, 2, 1]
    first, second, third = make(1), make(2), make(1)
    assert first != second and first == third and first is not third
    assert ran == [1, 2, -1, -2]


def test_prefect_task_input_hash_depends_on_task_key_and_code(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_task_input_hash_depends_on_task_key_and_code: the task's function
    swapped for one of the same code is cached, for new code is computed,
    and another task of the same code is computed (its own key). durable has
    no `foo.fn`: the running code is swapped (`__code__`, as a hot patch or a
    reloaded cell does), and the entry follows the code that runs."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    def foo(x: int) -> int:
        ran.append("foo")
        return x

    def foo_same_code(x: int) -> int:
        ran.append("foo")
        return x

    def foo_new_code(x: int) -> int:
        ran.append("new")
        return x + 1

    def bar(x: int) -> int:
        ran.append("foo")
        return x

    cached_foo, cached_bar = durable.step(cache=True)(foo), durable.step(cache=True)(bar)
    assert cached_foo(1) == 1
    foo.__code__ = foo_same_code.__code__
    assert cached_foo(1) == 1 and ran == ["foo"]
    foo.__code__ = foo_new_code.__code__
    assert cached_foo(1) == 2 and ran == ["foo", "new"]
    assert cached_bar(1) == 1 and cached_bar(1) == 1 and ran == ["foo", "new", "foo"]


def test_prefect_block_input_types_and_bytes(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_task_input_hash_works_with_block_input_types_and_bytes: a model
    with a bytes field counts by its fields' values ("dog" encoded as UTF-8
    or Latin-1 is the same bytes: cached); another x or z computes."""
    pydantic = pytest.importorskip("pydantic")
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    class TestBlock(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        x: int
        y: int
        z: bytes

    @durable.step(cache=True)
    def foo(instance: Any) -> int:
        ran.append(instance.x)
        return int(instance.x)

    calls = [(1, b"dog"), (4, b"dog"), (1, b"dog"), (1, "dog".encode("latin-1")), (1, b"cat")]
    assert [foo(TestBlock(x=x, y=2, z=z)) for x, z in calls] == [1, 4, 1, 1, 1]
    assert ran == [1, 4, 1]


def test_prefect_cache_key_fn_receives_resolved_futures(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cache_key_fn_receives_resolved_futures: the key function gets
    the value an upstream task returned, not a future; the second call with
    that value is cached. durable's key function gets the step's bound
    arguments (caching.md): the upstream step's output, here in two runs."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    seen: list[Any] = []
    ran: list[str] = []

    def check_args(x: str) -> str:
        seen.append(x)
        return x

    @durable.step
    def foo(x: str) -> str:
        return x

    @durable.step(cache=durable.Cache(key=check_args))
    def bar(x: str) -> str:
        ran.append(x)
        return x

    @durable.workflow(store=local_store)
    def my_flow(x: str) -> str:
        return bar(foo(x))

    assert my_flow("something") == "something"
    assert my_flow.with_options(run_id="again")("something") == "something"
    assert my_flow("other") == "other"
    assert seen == ["something", "something", "other"] and ran == ["something", "other"]
