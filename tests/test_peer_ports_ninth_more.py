"""The ninth round of the peers' own test cases, continued (see
tests/test_peer_ports_ninth.py): joblib (joblib/test/test_hashing.py: dicts
of arrays, dtypes, memory layout, hashes that stay the same across
sessions) and LangGraph (libs/langgraph/tests/test_pregel.py: tasks before
an interrupt, an interrupt in a task, a cached task before an interrupt,
nested tasks) and DBOS (tests/test_dbos.py: recovery of a run a thread
made). Executions are counted by the step bodies themselves."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable

np = pytest.importorskip("numpy")

# -- joblib: joblib/test/test_hashing.py ----------------------------------------


def test_joblib_hash_numpy_dict_of_arrays_and_dtypes(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_hash_numpy_dict_of_arrays, test_numpy_dtype_pickling: dicts whose
    arrays are equal by content hit ({1: arr1, 2: arr2} and {1: arr2, 2:
    arr1} with arr2 a copy of arr1), another array computes; a dtype, simple
    or structured, hits after a pickle round trip, alone or in a list."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def total(d: dict[int, Any]) -> float:
        ran.append("total")
        return float(sum(a.sum() for a in d.values()))

    @durable.step(cache=True)
    def itemsize(dtypes: Any) -> int:
        ran.append("itemsize")
        return sum(np.dtype(dt).itemsize for dt in dtypes)

    arr1 = np.random.RandomState(0).random_sample((10, 10))
    arr2, arr3 = arr1.copy(), arr1 + 1
    assert total({1: arr1, 2: arr2}) == total({1: arr2, 2: arr1}) and ran == ["total"]
    assert total({1: arr2, 2: arr3}) == float(arr1.sum() + arr3.sum()) and len(ran) == 2
    complex_dt = np.dtype([("name", np.str_, 16), ("grades", np.float64, (2,))])
    for dt in (np.dtype("f4"), complex_dt):
        back = pickle.loads(pickle.dumps(dt))
        assert back is not dt or dt.isbuiltin
        assert itemsize([dt, dt]) == itemsize([back, back]) == itemsize([dt, back])
    assert ran.count("itemsize") == 2


def test_joblib_hash_numpy_noncontiguous(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_hash_numpy_noncontiguous, test_hashes_are_different_between_c_
    and_fortran_contiguous_arrays: a strided slice of a Fortran array, its
    C-contiguous copy and its Fortran copy are three keys (the memory layout
    counts, as in joblib); each returns its own answer, none another's."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def layout(a: Any) -> tuple[bool, bool, float]:
        ran.append("layout")
        return bool(a.flags.c_contiguous), bool(a.flags.f_contiguous), float(a.sum())

    a = np.asarray(np.arange(6000).reshape((1000, 2, 3)), order="F")[:, :1, :]
    b, c = np.ascontiguousarray(a), np.asfortranarray(a)
    for x in (a, b, c, a.copy(order="K"), b.copy(), c.copy(order="F")):
        assert layout(x) == (x.flags.c_contiguous, x.flags.f_contiguous, float(a.sum()))
    assert len(ran) == 3  # the copies are of b's and c's layouts: hits


_SEED_SCRIPT = """
import collections, decimal, sys
import durable

@durable.step(cache=True)
def describe(tags, index):
    with open(sys.argv[1], "a") as log:
        log.write("ran\\n")
    return len(tags), sorted(index), sorted(len(v) for v in index.values())

tags = {"alpha", "beta", "gamma", frozenset({"x", "y"}), ("t", 1), decimal.Decimal("1.5")}
index = {"k" + str(i): {"v" + str(i), "w" + str(i)} for i in range(20)}
print(describe(tags, collections.OrderedDict(sorted(index.items()))))
"""


@pytest.mark.slow
def test_joblib_hashes_stay_the_same(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_hashes_stay_the_same: a hash must not change between sessions,
    or a cache is recomputed from scratch. Three processes with different
    string hash seeds (which reorder sets) call a cached step over sets and
    a mapping of sets: the first computes, the other two hit."""
    script, log = tmp_path / "seeded.py", tmp_path / "log"
    script.write_text(_SEED_SCRIPT)
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**child_env, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script), str(log)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert len(set(outputs)) == 1 and log.read_text().split() == ["ran"]


# -- LangGraph: libs/langgraph/tests/test_pregel.py ---------------------------------


def test_langgraph_interrupt_functional(store: durable.Store) -> None:
    """test_interrupt_functional: a task, then an interrupt, then a task
    given the answer; the resume runs the first task zero more times."""
    ran: list[str] = []

    @durable.step
    def foo(state: dict[str, str]) -> dict[str, str]:
        ran.append("foo")
        return {"a": state["a"] + "foo"}

    @durable.step
    def bar(state: dict[str, str]) -> dict[str, str]:
        ran.append("bar")
        return {"a": state["a"] + "bar", "b": state["b"]}

    @durable.workflow(store=store, run_id="1")
    def graph(inputs: dict[str, str]) -> dict[str, str]:
        fut_foo = foo(inputs)
        value = durable.wait_for("Provide value for bar:")
        return bar({**fut_foo, "b": value})

    with pytest.raises(durable.Suspended) as asked:
        graph({"a": ""})
    assert asked.value.waiting_for == "Provide value for bar:" and ran == ["foo"]
    run = graph.resume("1", inputs={"Provide value for bar:": "bar"})
    assert run.value == {"a": "foobar", "b": "bar"} and ran == ["foo", "bar"]


def test_langgraph_interrupt_task_functional(store: durable.Store) -> None:
    """test_interrupt_task_functional: LangGraph lets a task interrupt, and
    the same task twice. durable refuses a wait inside a step on purpose (a
    step is one recorded unit: its body cannot stop half way and be
    replayed, steering.md): a ConfigurationError, the step recorded as
    failed; the body asks instead, once per call of the task, and each
    answer answers one wait."""
    ran: list[str] = []

    @durable.step
    def asks_inside(state: str) -> str:
        ran.append("inside")
        return state + str(durable.wait_for("value"))

    @durable.workflow(store=store, run_id="1")
    def refused(inputs: str) -> str:
        return asks_inside(inputs)

    with pytest.raises(durable.ConfigurationError, match="inside a step"):
        refused("")
    assert ran == ["inside"] and [r.status for r in refused.runs()] == ["failed"]

    @durable.step
    def bar(state: str, value: str) -> str:
        ran.append(value)
        return state + value

    @durable.workflow(store=store, run_id="2")
    def graph(inputs: str) -> str:
        bar_result = bar(inputs + "foo", str(durable.wait_for("value")))
        return bar(bar_result, str(durable.wait_for("value")))

    with pytest.raises(durable.Suspended):
        graph("")
    with pytest.raises(durable.Suspended):
        graph.resume("2", inputs={"value": "bar"})
    assert graph.resume("2", inputs={"value": "baz"}).value == "foobarbaz"
    assert ran == ["inside", "bar", "baz"]


def test_langgraph_multiple_tasks_before_interrupt_resume(store: durable.Store) -> None:
    """test_multiple_tasks_before_interrupt_resume: tasks defined inside the
    entrypoint (new function objects on every call), two of them before the
    one that asks: the resume replays both (the same code, made anew) and
    runs neither again."""
    ran: list[str] = []

    @durable.workflow(store=store, run_id="1")
    def workflow(inputs: dict[str, int]) -> dict[str, Any]:
        @durable.step
        def step_a(x: int) -> int:
            ran.append("a")
            return x + 1

        @durable.step
        def step_b(x: int) -> int:
            ran.append("b")
            return x * 2

        b = step_b(step_a(inputs["x"]))
        answer = durable.wait_for(f"Result so far is {b}. What next?")
        return {"computed": b, "answer": answer}

    with pytest.raises(durable.Suspended) as asked:
        workflow({"x": 5})
    assert asked.value.waiting_for == "Result so far is 12. What next?"
    run = workflow.resume("1", inputs={"Result so far is 12. What next?": "continue"})
    assert run.value == {"computed": 12, "answer": "continue"} and ran == ["a", "b"]
    assert (run.steps_replayed, run.steps_executed) == (2, 1)


def test_langgraph_no_redundant_writes_for_cached_task(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_no_redundant_put_writes_for_cached_task: a cached task before an
    interrupt is not committed again on resume. Here the cached step's hit
    or miss is recorded at its position; the resume replays that record and
    neither looks the cache up nor writes to it again."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=True)
    def setup(x: int) -> int:
        ran.append(x)
        return x

    @durable.workflow(store=local_store, run_id="1")
    def workflow(x: int) -> dict[str, str]:
        n = setup(x)
        return {"answer": str(durable.wait_for(f"q{n}"))}

    with pytest.raises(durable.Suspended):
        workflow(1)
    before = durable.cache_info(setup)
    assert workflow.resume("1", inputs={"q1": "ans"}).value == {"answer": "ans"}
    after = durable.cache_info(setup)
    assert ran == [1] and (before.misses, before.entries) == (1, 1)
    assert (after.hits, after.misses, after.entries) == (before.hits, 1, 1)


def test_langgraph_imp_nested(store: durable.Store) -> None:
    """test_imp_nested: mapper tasks, each calling a submapper task, run at
    once over the input, then an interrupt; the resume with the answer runs
    no mapper nor submapper again. In durable the mappers are a loop_over
    on threads; a step called by a step is a plain call, part of its
    caller's recorded unit (identity.md), so it runs with it, once."""
    from concurrent.futures import ThreadPoolExecutor

    ran: list[str] = []

    @durable.step
    def submapper(value: int) -> str:
        ran.append(f"sub {value}")
        return str(value)

    @durable.step
    def mapper(value: int) -> str:
        ran.append(f"map {value}")
        return submapper(value) * 2

    @durable.workflow(store=store, run_id="1")
    def graph(values: list[int]) -> list[str]:
        with ThreadPoolExecutor(2) as pool:
            mapped = durable.loop_over(mapper, values, executor=pool)
        answer = durable.wait_for("question")
        return [m + answer + "a" for m in mapped]

    with pytest.raises(durable.Suspended):
        graph([0, 1])
    assert sorted(ran) == ["map 0", "map 1", "sub 0", "sub 1"]
    assert graph.resume("1", inputs={"question": "answer"}).value == ["00answera", "11answera"]
    assert len(ran) == 4 and graph([0, 1]) == ["00answera", "11answera"] and len(ran) == 4


# -- DBOS: tests/test_dbos.py ---------------------------------------------------


def test_dbos_recovery_thread(store: durable.Store) -> None:
    """test_recovery_thread: a run made in one thread and left pending is
    recovered by another (DBOS: its background recovery thread, after a
    relaunch): its body runs again, its finished step does not."""
    import threading

    ran: list[str] = []
    crash = {"now": True}

    @durable.step
    def fetch(var: str) -> str:
        ran.append("fetch")
        return var

    @durable.workflow(store=store)
    def test_workflow(var: str) -> str:
        value = fetch(var)
        ran.append("body")
        if crash["now"]:
            raise KeyboardInterrupt  # the process went away after the step
        return value

    errors: list[BaseException] = []

    def started() -> None:
        try:
            test_workflow.with_options(run_id="wf")("dbos")
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=started)
    worker.start()
    worker.join()
    assert [type(e) for e in errors] == [KeyboardInterrupt] and ran == ["fetch", "body"]
    crash["now"] = False
    [run] = test_workflow.recover()
    assert (run.status, run.value, run.steps_replayed) == ("completed", "dbos", 1)
    assert ran == ["fetch", "body", "body"]
