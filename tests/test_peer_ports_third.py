"""A third round of the peers' own test cases, ported to durable's API:
DBOS Transact (tests/test_dbos.py send/recv, recovery, non-serializable
values; tests/test_failures.py recovery during retries, the dead-letter
queue), Prefect (tests/results, tests/test_transactions.py, cache
expiration), joblib (joblib/test/test_memory.py: numpy memmaps, reduce_size)
and LangGraph (libs/langgraph/tests/test_pregel.py: pending writes, nested
and repeated subgraphs, faulty checkpointers).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves (in a file where a process boundary
is crossed); tests/test_peer_ports.py and test_peer_ports_more.py hold the
earlier ports."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import NOTE_HEAD

# -- DBOS: tests/test_dbos.py ---------------------------------------------------


def test_dbos_send_recv_as_wait_for(store: durable.Store) -> None:
    """test_send_recv: a workflow receives three messages, one on a topic and
    two on the default one, sent before it reads them. In durable a message
    is an input given to a resume (`wait_for` ~ `recv`): one resume may carry
    answers of several names, one answer answers one wait, so the second
    wait of the default topic suspends again. The body after the waits ran
    once; a completed run called again (DBOS's OAOO re-execution) runs
    nothing and waits for nothing."""
    recv_counter: list[str] = []

    @durable.workflow(store=store)
    def test_recv_workflow(topic: str) -> str:
        msg1 = durable.wait_for(topic)
        msg2 = durable.wait_for("default")
        msg3 = durable.wait_for("default")
        recv_counter.append(topic)
        return "-".join([str(msg1), str(msg2), str(msg3)])

    dest = test_recv_workflow.with_options(run_id="dest")
    with pytest.raises(durable.Suspended) as waiting:
        dest("testtopic")
    assert waiting.value.waiting_for == "testtopic"
    with pytest.raises(durable.Suspended) as waiting:
        test_recv_workflow.resume("dest", inputs={"default": "test1", "testtopic": "test2"})
    assert waiting.value.waiting_for == "default"
    done = test_recv_workflow.resume("dest", inputs={"default": "test3"})
    assert (done.value, done.steps_replayed) == ("test2-test1-test3", 2)
    assert dest("testtopic") == "test2-test1-test3"
    assert recv_counter == ["testtopic"]


def test_dbos_send_none_is_a_message(store: durable.Store) -> None:
    """test_send_recv (test_send_none): None sent as a message is received
    as None, not taken for "no message": the run completes with it, and a
    replay returns the recorded None."""
    ran: list[object] = []

    @durable.workflow(store=store, run_id="none")
    def test_recv_none() -> object:
        msg = durable.wait_for("msg")
        ran.append(msg)
        return msg

    with pytest.raises(durable.Suspended):
        test_recv_none()
    done = test_recv_none.resume("none", inputs={"msg": None})
    assert (done.status, done.value) == ("completed", None)
    assert test_recv_none() is None and ran == [None]


def test_dbos_recv_outside_a_workflow() -> None:
    """test_send_recv's last case: recv() outside a workflow raises, saying
    it must be called from within one (durable: ConfigurationError, as for
    suspend())."""
    with pytest.raises(durable.ConfigurationError, match="can only be called in a workflow body"):
        durable.wait_for("test1")
    with pytest.raises(durable.ConfigurationError, match="inside a workflow run"):
        durable.suspend("nothing to wait for")


def test_dbos_send_a_nonserializable_message(store: durable.Store) -> None:
    """test_nonserializable_values (DBOS.send of a function that cannot be
    serialized raises, and the receiving workflow still completes): an
    input that cannot be recorded is refused with an error that names it as
    the input given to the resume, not as a step's output; the step before
    the wait ran once, and a resume with a plain answer completes."""
    ran: list[str] = []

    @durable.step
    def test_reg_step(var: str) -> str:
        ran.append(var)
        return var

    @durable.workflow(store=store, run_id="ns")
    def test_reg_wf(var: str) -> str:
        return test_reg_step(var) + str(durable.wait_for("sss"))

    with pytest.raises(durable.Suspended):
        test_reg_wf("a")
    with pytest.raises(durable.SerializationError) as refused:
        test_reg_wf.resume("ns", inputs={"sss": threading.Lock()})
    message = str(refused.value)
    assert "input 'sss'" in message and "persist=False" not in message
    assert "the output of" not in message
    assert test_reg_wf.resume("ns", inputs={"sss": "b"}).value == "ab"
    assert ran == ["a"]


def test_dbos_nonserializable_values(store: durable.Store) -> None:
    """test_nonserializable_values: a step returning a function DBOS cannot
    serialize. durable records it with cloudpickle, so the run completes and
    a replay returns a working function; a step whose output cannot be
    pickled at all (a lock) fails the call naming the step, every time,
    with nothing recorded."""
    ran: list[str] = []

    def invalid_return() -> str:
        return "literal"

    @durable.step
    def test_ns_step(var: str) -> Any:
        ran.append(var)
        return invalid_return

    @durable.step
    def test_lock_step(var: str) -> Any:
        ran.append("lock")
        return threading.Lock()

    @durable.workflow(store=store, run_id="fn")
    def test_ns_wf(var: str) -> str:
        return str(test_ns_step(var)())

    @durable.workflow(store=store, run_id="lock")
    def test_bad_wf(var: str) -> None:
        test_lock_step(var)

    assert test_ns_wf("g") == "literal"
    run = test_ns_wf.run("g")
    assert (run.value, run.steps_executed) == ("literal", 0)
    assert test_ns_wf.with_options(on_change="rerun", restart=True)("g") == "literal"
    for _ in range(2):
        with pytest.raises(durable.SerializationError, match="test_lock_step"):
            test_bad_wf("d")
    assert ran == ["g", "g", "lock", "lock"]


def test_dbos_nonserializable_loop_output(store: durable.Store) -> None:
    """test_nonserializable_values with the function run over items (DBOS
    queues; durable's loop_over): outputs that cannot be recorded fail the
    block naming it, and the advice is about the function given to
    loop_over, which has no persist=False to set."""

    def make_lock(i: int) -> Any:
        return threading.Lock()

    @durable.workflow(store=store, run_id="loop")
    def test_bad_loop() -> list[Any]:
        return durable.loop_over(make_lock, [1, 2])

    with pytest.raises(durable.SerializationError, match=r"loop_over\(.*make_lock\)") as refused:
        test_bad_loop()
    assert "persist=False" not in str(refused.value)
    assert "from the function given to loop_over" in str(refused.value)


# -- DBOS: tests/test_failures.py, recovery -------------------------------------


def test_dbos_recovery_during_retries(store: durable.Store, clock: Any) -> None:
    """test_recovery_during_retries: recovery asked for while the run is in
    the last of its retries, in this process (DBOS's recovery handle waits
    for the same execution). durable's recover() skips a run a live process
    holds and reports it `running`; the step ran three times in all, and a
    recovery after the run completed finds nothing."""
    step_counter: list[int] = []
    started, release = threading.Event(), threading.Event()

    @durable.step(retries=2, retry_delay=0)
    def failing_step() -> None:
        step_counter.append(1)
        if len(step_counter) < 3:
            raise Exception("fail")
        started.set()
        assert release.wait(30)

    @durable.workflow(store=store, run_id="retrying")
    def failing_workflow() -> None:
        failing_step()

    outcome: list[object] = []
    runner = threading.Thread(target=lambda: outcome.append(failing_workflow()))
    runner.start()
    assert started.wait(30)
    try:
        reports = failing_workflow.recover()
    finally:
        release.set()
        runner.join()
    assert [(r.run_id, r.status, r.value) for r in reports] == [("retrying", "running", None)]
    assert outcome == [None] and len(step_counter) == 3
    assert failing_workflow.recover() == []
    assert failing_workflow() is None and len(step_counter) == 3


HELD = NOTE_HEAD + """
import time
from pathlib import Path

@durable.workflow(run_id="held")
def blocked_workflow() -> str:
    note("start")
    Path(LOG + ".started").touch()
    while not Path(LOG + ".release").exists():  # released by the test, not by time
        time.sleep(0.01)
    return "done"

if sys.argv[2] == "run":
    print(blocked_workflow())
else:
    for run in blocked_workflow.recover():
        print(run.run_id, run.status, run.value)
"""


def test_dbos_duplicate_recovery_does_not_rerun_running_workflow(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_duplicate_recovery_does_not_rerun_running_workflow: two
    recoveries asked for (here by two other processes) while the run is
    blocked in a live process do not start its body again; the run then
    completes, its body having started once."""
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(HELD)
    holder = subprocess.Popen(
        [sys.executable, str(script), str(log), "run"],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not Path(f"{log}.started").exists():  # polled: the child says when
            assert holder.poll() is None, holder.communicate()
            time.sleep(0.01)
        for _ in range(2):
            recovery = subprocess.run(
                [sys.executable, str(script), str(log), "recover"],
                env=child_env,
                capture_output=True,
                text=True,
            )
            assert recovery.returncode == 0, recovery.stderr
            assert recovery.stdout.split() == ["held", "running", "None"]
    finally:
        Path(f"{log}.release").touch()
        out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    assert out.split() == ["done"]
    assert log.read_text().split() == ["start"]


def test_dbos_dead_letter_queue(store: durable.Store) -> None:
    """test_dead_letter_queue, adapted: durable has no recovery budget
    (max_recovery_attempts) and no dead-letter status. What carries over:
    a completed run is never recovered again, however often recovery is
    asked for (DBOS: "retries of a completed workflow do not raise"), and a
    run that fails on every attempt is run once per recovery and reported
    `failed` with its error, never completed."""
    recovery_count: list[str] = []

    @durable.workflow(store=store)
    def dead_letter_workflow(fail: bool) -> str:
        recovery_count.append("fail" if fail else "ok")
        if fail:
            raise RuntimeError("poisoned")
        return "done"

    assert dead_letter_workflow.with_options(run_id="ok")(False) == "done"
    with pytest.raises(RuntimeError):
        dead_letter_workflow.with_options(run_id="poison")(True)
    for attempt in range(3):
        reports = dead_letter_workflow.recover()
        assert [(r.run_id, r.status, r.error) for r in reports] == [
            ("poison", "failed", "RuntimeError: poisoned")
        ]
        assert recovery_count == ["ok"] + ["fail"] * (attempt + 2)
    assert dead_letter_workflow.with_options(run_id="ok")(False) == "done"
    assert recovery_count.count("ok") == 1


# -- LangGraph: libs/langgraph/tests/test_pregel.py ------------------------------


def test_langgraph_pending_writes_resume(store: durable.Store, clock: Any) -> None:
    """test_pending_writes_resume: two parallel nodes, "one" succeeds and
    "two" fails twice (RetryPolicy(max_attempts=2)). The resume does not
    call "one" again and gives "two" two more attempts; once "two" succeeds
    both writes are applied (1 + 2 + 3 = 6). In durable the parallel nodes
    are a loop_over on a thread pool with checkpoint_items=True (a finished
    item is kept although the block failed); the failed node's record is
    its failures, in history."""
    from concurrent.futures import ThreadPoolExecutor

    calls = {"one": 0, "two": 0}
    two_fails = [True]

    @durable.step(retries=1, retry_delay=0)
    def node(name: str) -> int:
        calls[name] += 1
        if name == "two" and two_fails[0]:
            raise ConnectionError("I'm not good")
        return 2 if name == "one" else 3

    @durable.workflow(store=store, run_id="1")
    def graph(value: int) -> int:
        with ThreadPoolExecutor(2) as pool:
            writes = durable.loop_over(node, ["one", "two"], executor=pool, checkpoint_items=True)
        return value + sum(writes)

    for tries in (2, 4):
        with pytest.raises(ConnectionError, match="I'm not good"):
            graph(1)
        assert calls == {"one": 1, "two": tries}
    two_fails[0] = False
    run = graph.run(1)
    assert (run.value, calls) == (6, {"one": 1, "two": 5})
    assert graph(1) == 6 and calls == {"one": 1, "two": 5}


def test_langgraph_pending_writes_resume_async(store: durable.Store, clock: Any) -> None:
    """test_pending_writes_resume with the nodes as asyncio tasks (gathered
    steps, each at its own position): the node that succeeded is replayed
    on every resume, the failing one attempted twice each time."""
    calls = {"one": 0, "two": 0}
    two_fails = [True]

    @durable.step(retries=1, retry_delay=0)
    async def node(name: str) -> int:
        calls[name] += 1
        if name == "two" and two_fails[0]:
            raise ConnectionError("I'm not good")
        return 2 if name == "one" else 3

    @durable.workflow(store=store, run_id="1")
    async def graph(value: int) -> int:
        writes = await asyncio.gather(node("one"), node("two"))
        return value + sum(writes)

    for tries in (2, 4):
        with pytest.raises(ConnectionError, match="I'm not good"):
            asyncio.run(graph(1))
        assert calls == {"one": 1, "two": tries}
    two_fails[0] = False
    run = asyncio.run(graph.run(1))
    assert (run.value, run.steps_replayed, run.steps_executed) == (6, 1, 1)
    assert calls == {"one": 1, "two": 5}


def test_langgraph_multiple_subgraphs(store: durable.Store) -> None:
    """test_multiple_subgraphs, test_multiple_subgraphs_functional: one
    subgraph called twice by a parent node (with other inputs, and with the
    same input) is two child runs, each run once; the parent run again
    replays both results, and each child is listed under its parent's
    position."""
    ran: list[int] = []

    @durable.workflow(store=store)
    def add_one(x: int) -> int:
        ran.append(x)
        return x + 1

    @durable.workflow(store=store, run_id="parent")
    def parent(x: int) -> list[int]:
        return [add_one(x), add_one(x + 10), add_one(x)]

    assert parent(1) == [2, 12, 2] and parent(1) == [2, 12, 2]
    assert ran == [1, 11, 1]
    assert sorted(i.parent or "" for i in add_one.runs()) == [
        f"{parent.name}/parent@{p}" for p in range(3)
    ]


def test_langgraph_doubly_nested_graph_interrupts(store: durable.Store) -> None:
    """test_doubly_nested_graph_interrupts: grandparent -> parent -> child,
    the child interrupting. The interrupt reaches the outermost caller; the
    answer given to the grandparent's resume reaches the child; the nodes
    before the subgraphs ran once each, those after once."""
    ran: list[str] = []

    @durable.step
    def node(name: str) -> str:
        ran.append(name)
        return name

    @durable.workflow(store=store)
    def child(query: str) -> str:
        node("child before")
        answer = durable.wait_for("answer")
        return node(f"{query}: {answer}")

    @durable.workflow(store=store)
    def parent(query: str) -> str:
        node("parent before")
        return child(query) + "|" + node("parent after")

    @durable.workflow(store=store, run_id="grand")
    def grandparent(query: str) -> str:
        node("grand before")
        return parent(query) + "|" + node("grand after")

    with pytest.raises(durable.Suspended) as waiting:
        grandparent("what is weather in sf")
    assert waiting.value.waiting_for == "answer"
    assert ran == ["grand before", "parent before", "child before"]
    done = grandparent.resume("grand", inputs={"answer": "sunny"})
    assert done.value == "what is weather in sf: sunny|parent after|grand after"
    assert grandparent("what is weather in sf") == done.value
    assert ran == [
        "grand before", "parent before", "child before",
        "what is weather in sf: sunny", "parent after", "grand after",
    ]  # fmt: skip


def test_langgraph_null_resume_with_multiple_interrupts(store: durable.Store) -> None:
    """test_null_resume_disallowed_with_multiple_interrupts: two interrupts
    pending; a resume without an answer (or with the answer to the second
    only, which is not waited for yet) does not pass the first with None:
    the run suspends again at it, warning that the other input was not
    taken; answering both at once completes it. The node before ran once."""
    ran: list[str] = []

    @durable.step
    def prepare() -> str:
        ran.append("prepare")
        return "ready"

    @durable.workflow(store=store, run_id="t")
    def graph() -> list[Any]:
        prepare()
        return [durable.wait_for("a"), durable.wait_for("b")]

    with pytest.raises(durable.Suspended):
        graph()
    with pytest.raises(durable.Suspended) as waiting:
        graph.resume("t")
    assert waiting.value.waiting_for == "a"
    with pytest.warns(UserWarning, match="no wait took the inputs"):
        with pytest.raises(durable.Suspended) as waiting:
            graph.resume("t", inputs={"b": 2})
    assert waiting.value.waiting_for == "a"
    assert graph.resume("t", inputs={"a": 1, "b": 2}).value == [1, 2]
    assert ran == ["prepare"]


class FaultyStore:
    """LangGraph's faulty checkpointers (test_checkpoint_errors) as a key
    store of durable's own protocol, in this process's memory: reads fail
    while `fail_get` is set, and the create of a key ending in `fail_key`
    fails (a record's write, LangGraph's put_writes)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.fail_get = False
        self.fail_key: str | None = None

    def _read(self) -> None:
        if self.fail_get:
            raise ValueError("Faulty get_tuple")

    def get(self, key: str) -> bytes | None:
        self._read()
        return self.data.get(key)

    def get_many(self, keys: Any) -> dict[str, bytes]:
        self._read()
        return {k: self.data[k] for k in keys if k in self.data}

    def put(self, key: str, data: bytes) -> None:
        self.data[key] = data

    def create(self, key: str, data: bytes) -> bool:
        if self.fail_key is not None and key.endswith(self.fail_key):
            raise ValueError("Faulty put_writes")
        with self.lock:
            if key in self.data:
                return False
            self.data[key] = data
            return True

    def list(self, prefix: str) -> list[str]:
        self._read()
        return [k for k in list(self.data) if k.startswith(prefix)]

    def delete(self, keys: Any) -> None:
        for k in keys:
            self.data.pop(k, None)


def test_langgraph_checkpoint_errors() -> None:
    """test_checkpoint_errors: a checkpointer whose reads fail, or whose
    writes fail, makes the invocation raise its error (durable: a
    StorageError naming the backend's error). A failed read runs nothing;
    a failed write of the second node's record leaves the first node's
    record, so once the store is well the run replays the first node and
    runs the second one again (its record never landed): each node's
    output was recorded once."""
    backend = FaultyStore()
    ran: list[str] = []

    @durable.step
    def agent(inp: str) -> str:
        ran.append(inp)
        return inp.upper()

    @durable.workflow(store=durable.open_store(backend), run_id="thread-1")
    def graph(inp: str) -> str:
        return agent(inp) + agent(inp + "!")

    backend.fail_get = True
    with pytest.raises(durable.StorageError, match="Faulty get_tuple"):
        graph("a")
    assert ran == []
    backend.fail_get, backend.fail_key = False, "steps/00000001"
    with pytest.raises(durable.StorageError, match="Faulty put_writes"):
        graph("a")
    assert ran == ["a", "a!"]
    backend.fail_key = None
    run = graph.run("a")
    assert (run.value, run.steps_replayed, run.steps_executed) == ("AA!", 1, 1)
    assert ran == ["a", "a!", "a!"]
    assert graph("a") == "AA!" and len(ran) == 3


# -- Prefect: tests/results, tests/test_transactions.py, cache expiration --------


def test_prefect_cache_expiration_at_the_boundary(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, clock: Any
) -> None:
    """test_cache_key_hits_with_future_expiration_are_cached /
    _past_expiration_are_not_cached at the edge: an entry exactly
    `expire` old is still served (Prefect: expired only once the
    expiration is past), a moment later it is computed again; inside a run
    the same rule holds, and the run's record replays what it was served."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=durable.Cache(expire=60))
    def task(x: int) -> int:
        ran.append(x)
        return x * 10

    @durable.workflow(store=local_store)
    def flow(x: int) -> int:
        return task(x)

    assert task(1) == 10
    clock.now += 60
    assert task(1) == 10 and flow.with_options(run_id="edge")(1) == 10 and ran == [1]
    clock.now += 0.001
    assert flow.with_options(run_id="past")(1) == 10 and ran == [1, 1]
    assert task(1) == 10 and flow.with_options(run_id="edge")(1) == 10 and ran == [1, 1]


@pytest.mark.parametrize("persist", [True, False])
@pytest.mark.parametrize(
    "result", [{}, [], {"type": "foo"}, {"type": "literal", "user-stuff": "bar"}, {"type": "persisted"}]
)
def test_prefect_empty_and_resultlike_results_are_retained(
    store: durable.Store, persist: bool, result: Any
) -> None:
    """test_task_empty_result_is_retained, test_task_resultlike_result_is
    _retained, test_flow_empty_result_is_retained: a task returning an empty
    dict or list, or a dict shaped like a result record, gives it back as it
    is, persisted or not, live and replayed; as the completed run's value
    when persisted: a persist=False step's value is never stored, so a
    workflow returning it is refused (a re-call would have nothing to give)."""
    ran: list[int] = []

    @durable.step(persist=persist)
    def my_task() -> Any:
        ran.append(1)
        return type(result)(result)

    @durable.workflow(store=store, run_id="flow")
    def my_flow() -> Any:
        out = my_task()
        assert type(out) is type(result) and out == result
        return out

    if not persist:
        with pytest.raises(durable.SerializationError, match="persist=True"):
            my_flow()
        assert [r.status for r in my_flow.runs()] == ["failed"] and ran == [1]
        return
    assert my_flow() == result
    resumed = my_flow.with_options(on_change="rerun").run()
    assert resumed.value == result and type(resumed.value) is type(result)
    forked = my_flow.fork("flow", at=1)
    assert forked.value == result and ran == [1]


RACE = NOTE_HEAD + """
import time
from pathlib import Path

@durable.step(cache=True)
def compute(key: str) -> int:
    note("computed")
    Path(f"{LOG}.{os.getpid()}").touch()
    # Both processes are inside the step before either stores its output:
    # each waits until the other one arrived (told by a file, not by time).
    while len(list(Path(LOG).parent.glob(Path(LOG).name + ".*"))) < 2:
        time.sleep(0.01)
    return os.getpid()

print(compute("the-key"))
"""


def test_prefect_competing_write_transaction(tmp_path: Path, child_env: dict[str, str]) -> None:
    """TestWithResultStore.test_competing_write_transaction: two writers of
    one cache key at once. Prefect's SERIALIZABLE isolation makes the second
    wait for the first; durable lets both compute (DESIGN: no lock across
    processes for a cache entry) and the first entry written wins: both
    processes return that one value, the store keeps one entry, and a third
    process is served it without computing."""
    script, log = tmp_path / "race.py", tmp_path / "log"
    script.write_text(RACE)
    argv = [sys.executable, str(script), str(log)]
    racers = [
        subprocess.Popen(argv, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [r.communicate(timeout=60) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], [err for _, err in outs]
    (winner,) = {out.split()[0] for out, _ in outs}
    assert winner in {str(r.pid) for r in racers}
    third = subprocess.run(argv, env=child_env, capture_output=True, text=True)
    assert third.stdout.split() == [winner]
    assert log.read_text().split() == ["computed"] * 2
    listing = subprocess.run(
        [sys.executable, "-m", "durable", "cache", "ls", "--json"],
        env=child_env,
        capture_output=True,
        text=True,
    )
    assert listing.returncode == 0, listing.stderr
    assert len(json.loads(listing.stdout)) == 1


def test_prefect_transaction_rollback_of_a_block(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """TestRollBacks.test_txns_rollback_on_exception / TestCommitMode
    .test_txns_dont_commit_on_exception, adapted: a group of cached tasks
    (a loop_over block, recorded once) fails on its third item. Prefect
    rolls back the staged records of the whole transaction; durable records
    nothing for the block (the run resumes at it), while the cache entries of
    the items that succeeded stay, as a plain call's would (docs: caching,
    loop_over). The resumed block is served them and computes the failed
    item only. (The failure is told by a file: a list the step read would
    be captured state, part of its cache key.)"""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []
    bad = tmp_path / "bad"
    bad.write_text("3")

    @durable.step(cache=True)
    def stage(x: int) -> int:
        ran.append(x)
        if str(x) == bad.read_text():
            raise ValueError(f"item {x} failed")
        return x * x

    @durable.workflow(store=local_store, run_id="txn")
    def flow(items: list[int]) -> list[int]:
        return durable.loop_over(stage, items)

    with pytest.raises(ValueError, match="item 3 failed"):
        flow([1, 2, 3, 4])
    assert ran == [1, 2, 3]
    assert [s.position for s in flow.history("txn") if s.status == "completed" and s.position >= 0] == []
    bad.write_text("")
    assert flow([1, 2, 3, 4]) == [1, 4, 9, 16]
    assert ran == [1, 2, 3, 3, 4]
    assert flow([1, 2, 3, 4]) == [1, 4, 9, 16] and len(ran) == 5


# -- joblib: joblib/test/test_memory.py -------------------------------------------


def test_joblib_memmap_argument(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """test_memory_numpy_check_mmap_mode, adapted: durable has no mmap_mode
    (a hit reads its own copy); what it must get right is a memmap given as
    an argument. It counts by content: the same file again is a hit, the
    file changed on disk (through the map or by another writer) computes
    again, never the old output. A hit's array is the caller's own: writing
    to it changes neither the entry nor the file."""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=True)
    def twice(a: Any) -> Any:
        ran.append(1)
        return a * 2

    path = tmp_path / "data.bin"
    mm = np.memmap(path, dtype="f8", mode="w+", shape=(3,))
    mm[:] = 1.0
    mm.flush()
    assert twice(mm).tolist() == [2.0] * 3 and twice(mm).tolist() == [2.0] * 3 and len(ran) == 1
    mm[0] = 5.0
    mm.flush()
    assert twice(mm).tolist() == [10.0, 2.0, 2.0] and len(ran) == 2
    other = np.memmap(path, dtype="f8", mode="r+", shape=(3,))
    other[1] = 7.0
    other.flush()
    reader = np.memmap(path, dtype="f8", mode="r", shape=(3,))
    assert twice(reader).tolist() == [10.0, 14.0, 2.0] and len(ran) == 3
    served = twice(reader)
    served[:] = -1
    assert twice(reader).tolist() == [10.0, 14.0, 2.0] and len(ran) == 3
    assert reader.tolist() == [5.0, 7.0, 1.0]


def test_joblib_arrays_of_the_same_bytes(local_store: durable.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_memory_numpy with arrays that hold the same data but differ in
    dtype, shape, order or view (joblib hashes them apart): a square matrix
    and its transpose share one buffer, a strided view and its copy share
    values; each is served the output for its own values, never another's.
    The same arrays again are all hits. (A copy in another memory order or
    of a non-contiguous view may compute again, where joblib hashes the
    values in C order: a miss, never a wrong value.)"""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[str] = []

    @durable.step(cache=True)
    def as_lists(a: Any) -> Any:
        ran.append(a.dtype.str)
        return [a.dtype.str, list(a.shape), a.tolist()]

    a = np.arange(9, dtype="<i8").reshape(3, 3)
    arrays = [
        a, a.T, a.reshape(9), a.reshape(1, 9), a.view("<u8"), a.astype(">i8"), a[::-1], a[:, ::2],
        np.asfortranarray(a.T),
    ]  # fmt: skip
    for arr in arrays:
        assert as_lists(arr) == [arr.dtype.str, list(arr.shape), arr.tolist()]
    computed = len(ran)
    assert computed == len(arrays) - 1  # np.asfortranarray(a.T) is a.T itself
    for arr in arrays:
        assert as_lists(arr) == [arr.dtype.str, list(arr.shape), arr.tolist()]
        assert as_lists(arr.copy()) == [arr.dtype.str, list(arr.shape), arr.tolist()]
    assert len(ran) <= 2 * computed
    both = len(ran)
    for arr in arrays:
        assert as_lists(arr.copy()) == [arr.dtype.str, list(arr.shape), arr.tolist()]
    assert len(ran) == both


def test_joblib_same_function_name_in_two_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_store: durable.Store
) -> None:
    """joblib's func_dir is module/function, so functions of one name in two
    modules never share entries. durable keys an entry by the step's
    fingerprint, which holds its module's identity and the constants it
    reads: two modules whose `f` differs only by a module constant, or not
    at all, never serve each other's outputs."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    source = (
        "import durable\nSCALE = {scale}\nRAN = []\n\n"
        "@durable.step(cache=True)\ndef f(x):\n    RAN.append(x)\n    return x * SCALE\n"
    )
    for name, scale in (("peers6_moda", 1), ("peers6_modb", 2), ("peers6_modc", 1)):
        (tmp_path / f"{name}.py").write_text(source.format(scale=scale))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mods = [importlib.import_module(n) for n in ("peers6_moda", "peers6_modb", "peers6_modc")]
    try:
        assert [m.f(3) for m in mods] == [3, 6, 3]
        assert [m.f(3) for m in mods] == [3, 6, 3]
        assert [m.RAN for m in mods] == [[3], [3], [3]]
    finally:
        for m in mods:
            sys.modules.pop(m.__name__, None)


def test_joblib_reduce_size_bytes_and_age(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, clock: Any
) -> None:
    """test_memory_reduce_size_bytes_limit, _age_limit: ten entries of
    1000 bytes; `durable cache prune --max-size` 1MB keeps all, 3KB keeps
    the two most recently used (joblib keeps two), 500B none;
    `--older-than` keeps the entries used since. What is pruned computes
    again, what is kept is served."""
    from durable._cli.main import main

    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=True)
    def get_1000_bytes(arg: int) -> str:
        ran.append(arg)
        return "a" * 1000

    def prune(*argv: str) -> int:
        assert main(["cache", "prune", *argv, "--store", str(local_store.url)]) == 0
        return durable.cache_info(get_1000_bytes).entries

    for arg in range(10):
        get_1000_bytes(arg)
        clock.now += 100  # a hit marks its use at most once a minute
    get_1000_bytes(0)  # used again: the most recent
    clock.now += 100
    assert prune("--max-size", "1MB") == 10
    assert prune("--max-size", "3KB") == 2
    ran.clear()
    assert [get_1000_bytes(arg) for arg in (0, 9)] == ["a" * 1000] * 2 and ran == []
    assert prune("--max-size", "500B") == 0
    for arg in range(10):
        get_1000_bytes(arg)
    clock.now += 3600
    get_1000_bytes(-1)
    get_1000_bytes(-2)
    assert prune("--older-than", "30m") == 2
    ran.clear()
    assert get_1000_bytes(-1) == get_1000_bytes(-2) == "a" * 1000 and ran == []
    get_1000_bytes(0)
    assert ran == [0]


def test_dbos_get_event_while_the_workflow_runs(local_store: durable.Store) -> None:
    """test_set_get_events: events a running workflow set are read from
    outside while it still runs, and a key set again reads its new value
    once set. durable's events are the step outputs recorded so far
    (`durable.load`, `history()`, `runs()`): read while the run is live in
    another thread, then after it completed."""
    reached, release = threading.Event(), threading.Event()
    ran: list[str] = []

    @durable.step
    def set_event(key: str, value: str) -> dict[str, str]:
        ran.append(value)
        return {key: value}

    @durable.workflow(store=local_store, run_id="events")
    def test_setevent_workflow() -> str:
        set_event("key1", "value1")
        set_event("key2", "value2")
        reached.set()
        assert release.wait(30)
        set_event("key1", "value3")
        return "done"

    runner = threading.Thread(target=test_setevent_workflow)
    runner.start()
    try:
        assert reached.wait(30)
        seen = [durable.load(test_setevent_workflow, "events", p) for p in range(3)]
        (info,) = test_setevent_workflow.runs()
    finally:
        release.set()
        runner.join()
    assert seen == [{"key1": "value1"}, {"key2": "value2"}, None]
    assert (info.status, info.steps) == ("running", 2)
    after = [durable.load(test_setevent_workflow, "events", p) for p in range(3)]
    assert after == [{"key1": "value1"}, {"key2": "value2"}, {"key1": "value3"}]
    assert test_setevent_workflow() == "done" and ran == ["value1", "value2", "value3"]


EVENTS = NOTE_HEAD + """
import time
from pathlib import Path

@durable.step
def set_event(key, value):
    note(value)
    return {key: value}

@durable.workflow(run_id="events")
def test_setevent_workflow():
    set_event("key1", "value1")
    set_event("key2", "value2")
    Path(LOG + ".reached").touch()
    while not Path(LOG + ".release").exists():  # released by the test, not by time
        time.sleep(0.01)
    return "done"

print(test_setevent_workflow())
"""


def test_dbos_get_event_from_another_process(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_set_get_events with the reader in another process (DBOS reads
    events through the database): the outputs recorded so far by a live run
    are read in this process while the other one holds the run, and the run
    is listed as running there."""
    script, log = tmp_path / "events.py", tmp_path / "log"
    script.write_text(EVENTS)
    holder = subprocess.Popen(
        [sys.executable, str(script), str(log)],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = durable.open_store(child_env["DURABLE_STORE"])
    try:
        while not Path(f"{log}.reached").exists():  # polled: the child says when
            assert holder.poll() is None, holder.communicate()
            time.sleep(0.01)
        workflow = "events.test_setevent_workflow"
        seen = [durable.load(workflow, "events", p, store=store) for p in range(3)]
        listing = subprocess.run(
            [sys.executable, "-m", "durable", "runs", "--status", "running", "--json"],
            env=child_env,
            capture_output=True,
            text=True,
        )
    finally:
        Path(f"{log}.release").touch()
        out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    assert seen == [{"key1": "value1"}, {"key2": "value2"}, None]
    assert listing.returncode == 0, listing.stderr
    assert [r["runId"] for r in json.loads(listing.stdout)] == ["events"]
    assert out.split() == ["done"] and log.read_text().split() == ["value1", "value2"]


@dataclasses.dataclass
class MemoryPydantic:
    """LangGraph's MemoryPydantic: a value of a user's class, not plain data."""

    foo: str


def test_langgraph_strict_serde_blocks_unregistered(tmp_path: Path) -> None:
    """test_memory_saver_strict_blocks_unregistered, adapted: LangGraph's
    strict serializer stores an unregistered type as a plain dict and warns.
    durable's strict store (allow_pickle=False) never records or loads
    what is not plain data: a step returning such an object fails before
    anything is recorded (the step ran, its output was not kept), and a
    record pickled by a trusting process is refused (IntegrityError), not
    decoded nor run again; the trusting store then resumes it."""
    ran: list[str] = []

    @durable.step
    def make() -> MemoryPydantic:
        ran.append("make")
        return MemoryPydantic(foo="bar")

    @durable.workflow(run_id="thread-1", name="graph")
    def graph() -> Any:
        obj = make()
        return [obj.foo, durable.wait_for("answer")]

    trusting = graph.with_options(store=durable.open_store(tmp_path / "a"))
    strict = graph.with_options(store=durable.open_store(tmp_path / "a", allow_pickle=False))
    with pytest.raises(durable.Suspended):
        trusting()
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        strict.resume("thread-1", inputs={"answer": 1})
    assert ran == ["make"]
    assert trusting.resume("thread-1", inputs={"answer": 1}).value == ["bar", 1]
    assert ran == ["make"]
    fresh = graph.with_options(store=durable.open_store(tmp_path / "b", allow_pickle=False))
    with pytest.raises(durable.SerializationError, match="allow_pickle=False"):
        fresh()
    assert ran == ["make", "make"]


SUBGRAPH_CRASH = NOTE_HEAD + """
@durable.step
def node(name: str) -> str:
    note(name)
    return name

@durable.workflow
def subgraph(x: str) -> str:
    first = node("sub 1")
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return first + "+" + node("sub 2")

@durable.workflow(run_id="parent")
def parent(x: str) -> str:
    before = node("parent before")
    return before + "|" + subgraph(x) + "|" + node("parent after")

run = parent.run("x")
print(run.value, run.steps_replayed, run.steps_executed)
for info in subgraph.runs():
    print(info.run_id, info.status, info.parent)
"""


def test_langgraph_subgraph_checkpoint_after_kill_9(tmp_path: Path, child_env: dict[str, str]) -> None:
    """test_subgraph_checkpoint_true with a crash inside the subgraph: the
    process is killed with SIGKILL after the subgraph's first node. The
    next process resumes the parent, which resumes its child run: the
    parent's first node and the child's first node replay, the rest run
    once; the child is listed under the parent's position."""
    script, log = tmp_path / "graph.py", tmp_path / "log"
    script.write_text(SUBGRAPH_CRASH)
    argv = [sys.executable, str(script), str(log)]
    crashed = subprocess.run(argv, env=dict(child_env, CRASH="1"), capture_output=True, text=True)
    assert crashed.returncode == -9
    done = subprocess.run(argv, env=child_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    value, child = done.stdout.splitlines()
    assert value.rsplit(" ", 2) == ["parent before|sub 1+sub 2|parent after", "1", "2"]
    assert child.split() == ["parent.1", "completed", "graph.parent/parent@1"]
    assert log.read_text().splitlines() == ["parent before", "sub 1", "sub 2", "parent after"]


def test_langgraph_checkpoint_list_filter_delete(store: durable.Store) -> None:
    """libs/checkpoint tests (list with a filter, delete_thread) over runs:
    runs of three threads in three states are listed by status; deleting
    one removes it and its records, leaves the others, and the same call
    then starts that thread afresh (its node runs again); the others replay."""
    ran: list[str] = []

    @durable.step
    def node(thread: str) -> str:
        ran.append(thread)
        return thread

    @durable.workflow(store=store)
    def graph(thread: str, ask: bool) -> str:
        out = node(thread)
        if ask:
            return out + str(durable.wait_for("answer"))
        return out

    graph.with_options(run_id="done")("done", False)
    with pytest.raises(durable.Suspended):
        graph.with_options(run_id="waiting")("waiting", True)
    with pytest.raises(durable.Suspended):
        graph.with_options(run_id="other")("other", True)
    by_status = sorted((i.status, i.run_id) for i in graph.runs())
    assert by_status == [("completed", "done"), ("suspended", "other"), ("suspended", "waiting")]
    graph.delete("waiting")
    assert sorted(i.run_id for i in graph.runs()) == ["done", "other"]
    with pytest.raises(durable.RunNotFoundError):
        graph.history("waiting")
    with pytest.raises(durable.Suspended):
        graph.with_options(run_id="waiting")("waiting", True)
    assert graph.with_options(run_id="done")("done", False) == "done"
    assert graph.resume("other", inputs={"answer": "!"}).value == "other!"
    assert ran == ["done", "waiting", "other", "waiting"]


def test_dbos_send_to_a_workflow_that_does_not_recv(store: durable.Store) -> None:
    """test_send_recv, a message sent to a workflow that is not receiving
    on that topic (DBOS keeps it for a later recv). A run stopped by
    suspend() (durable's pause for new arguments, not a wait) resumed with
    inputs= has no wait to take them: it suspends again and says so,
    naming the inputs and the way that works (resume with the argument);
    the step before the pause ran once."""
    ran: list[str] = []

    @durable.step
    def prepare(order: str) -> str:
        ran.append(order)
        return order

    @durable.workflow(store=store, run_id="approval")
    def approve(order: str, approved: bool = False) -> str:
        prepared = prepare(order)
        if not approved:
            durable.suspend("waiting for approval")
        return prepared + " approved"

    with pytest.raises(durable.Suspended):
        approve("o-1")
    with pytest.warns(UserWarning, match=r"no wait took the inputs .*'approved'") as told:
        with pytest.raises(durable.Suspended):
            approve.resume("approval", inputs={"approved": True})
    assert "resume(run_id, name=value)" in str(told[0].message)
    assert told[0].filename == __file__
    assert approve.resume("approval", approved=True).value == "o-1 approved"
    assert ran == ["o-1"]


def test_dbos_send_to_a_workflow_started_in_a_loop_item(store: durable.Store) -> None:
    """test_send_recv with the receiver started by the sender's workflow
    (DBOS.start_workflow in a workflow: a child). A workflow called inside
    a loop_over item is no child run in durable (items run plainly): it is
    a run of its own, and a wait there suspends the caller too. Answers
    given to the caller's resume cannot reach it: the caller suspends again
    and says so, naming that run; answered through its own resume, it
    completes, and the caller's next call is served its value. Each body
    step ran once."""
    ran: list[str] = []

    @durable.step
    def work(x: int) -> int:
        ran.append(f"work {x}")
        return x

    @durable.workflow(store=store)
    def test_recv_workflow(x: int) -> str:
        return f"{work(x)}:{durable.wait_for('msg')}"

    @durable.workflow(store=store, run_id="sender")
    def test_send_workflow() -> list[str]:
        ran.append("sender")
        return durable.loop_over(test_recv_workflow, [1])

    with pytest.raises(durable.Suspended) as waiting:
        test_send_workflow()
    receiver = waiting.value.run_id
    assert receiver != "sender" and waiting.value.waiting_for == "msg"
    with pytest.warns(UserWarning, match=f"in run '{receiver}'") as told:
        with pytest.raises(durable.Suspended):
            test_send_workflow.resume("sender", inputs={"msg": "hello"})
    assert "not as a child run" in str(told[0].message)
    assert test_recv_workflow.resume(receiver, inputs={"msg": "hello"}).value == "1:hello"
    assert test_send_workflow.resume("sender").value == ["1:hello"]
    assert ran == ["sender", "work 1", "sender", "sender"]


def test_langgraph_interrupt_subgraph_reenter(store: durable.Store) -> None:
    """test_interrupt_subgraph_reenter_checkpointer_true: a parent calls
    one subgraph twice (a loop), the subgraph interrupting each time. Each
    entry is its own child run: the first resume answers the first entry's
    interrupt, the second entry then interrupts again and the next resume
    answers it; subnode_1 ran once per entry, subnode_2's work once per
    answer, and the parent's node before the loop once."""
    called: list[str] = []

    @durable.step
    def subnode_1(foo: str) -> str:
        called.append("subnode_1")
        return "subgraph_1"

    @durable.step
    def subnode_2(value: str) -> str:
        called.append("subnode_2")
        return value + "baz"

    @durable.workflow(store=store)
    def subgraph(foo: str) -> str:
        subnode_1(foo)
        return subnode_2(str(durable.wait_for("value")))

    @durable.step
    def node(foo: str) -> str:
        called.append("parent")
        return foo + "|parent"

    @durable.workflow(store=store, run_id="1")
    def parent(foo: str) -> list[str]:
        start = node(foo)
        return [start] + [subgraph(f"{start}:{counter}") for counter in range(2)]

    with pytest.raises(durable.Suspended) as waiting:
        parent("")
    # Named: the run to resume, and the child that waits.
    assert (waiting.value.run_id, waiting.value.child, waiting.value.waiting_for) == ("1", "1.1", "value")
    with pytest.raises(durable.Suspended) as waiting:
        parent.resume("1", inputs={"value": "bar"})
    assert (waiting.value.run_id, waiting.value.child, waiting.value.waiting_for) == ("1", "1.2", "value")
    assert parent.resume("1", inputs={"value": "qux"}).value == ["|parent", "barbaz", "quxbaz"]
    assert called == ["parent", "subnode_1", "subnode_2", "subnode_1", "subnode_2"]


def test_dbos_fork_events(store: durable.Store) -> None:
    """test_fork_events: a workflow sets an event three times (the third in
    a step); forked from each position, the fork starts with the events set
    before that position (none, 0, then 1) and ends with 2, running only the
    operations from there; a fork of a fork does the same."""
    ran: list[int] = []

    @durable.step
    def set_event(val: int) -> int:
        ran.append(val)
        return val

    @durable.workflow(store=store, run_id="events")
    def workflow() -> list[int]:
        return [set_event(0), set_event(1), set_event(2)]

    assert workflow() == [0, 1, 2] and ran == [0, 1, 2]
    for at in range(4):
        ran.clear()
        fork = workflow.fork("events", at=at, new_run_id=f"fork-{at}")
        assert fork.value == [0, 1, 2] and ran == list(range(at, 3))
        assert (fork.steps_replayed, fork.steps_executed) == (at, 3 - at)
        assert [durable.load(workflow, f"fork-{at}", p) for p in range(3)] == [0, 1, 2]
    ran.clear()
    again = workflow.fork("fork-3", at=3, new_run_id="fork-of-fork")
    assert (again.value, again.steps_executed, ran) == ([0, 1, 2], 0, [])


def test_prefect_cache_key_with_kwargs(local_store: durable.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """TestInputsPolicy over a task taking **kwargs (Prefect hashes the
    bound inputs, kwargs included): the same keywords again are a hit, an
    ignored one passed through **kwargs does not count, another value
    computes, and no call is ever served the output of other keywords
    (keywords in another order may compute again: a dict's order counts in
    durable's digest)."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[dict[str, Any]] = []

    @durable.step(cache=durable.Cache(ignore=("verbose",)))
    def task(x: int, **kwargs: int) -> list[Any]:
        ran.append(kwargs)
        return [x, sorted((k, v) for k, v in kwargs.items() if k != "verbose")]

    assert task(1, a=1, b=2) == [1, [("a", 1), ("b", 2)]]
    assert task(1, a=1, b=2) == task(1, a=1, b=2, verbose=True) == [1, [("a", 1), ("b", 2)]]
    assert len(ran) == 1
    assert task(1, b=2, a=1) == [1, [("a", 1), ("b", 2)]]
    assert task(1, a=1, b=3) == [1, [("a", 1), ("b", 3)]]
    assert task(1, a=1) == [1, [("a", 1)]] and task(1) == [1, []]
    assert task(1, a=1, b=2, c=0) == [1, [("a", 1), ("b", 2), ("c", 0)]]
    computed = len(ran)
    assert task(1, a=1, b=3) == [1, [("a", 1), ("b", 3)]] and task(1) == [1, []]
    assert len(ran) == computed


def test_langgraph_fork_does_not_apply_pending_writes(store: durable.Store) -> None:
    """test_fork_does_not_apply_pending_writes: parallel tasks of which one
    failed leave pending writes; a fork from the checkpoint before them
    runs every task again (no pending write applied), while the source
    thread, resumed, runs only the failed one. In durable the tasks are a
    loop_over with checkpoint_items=True: its kept items belong to the
    source run and are not copied into a fork from the block's position."""
    ran: list[Any] = []
    fail = [True]

    @durable.step
    def before() -> int:
        ran.append("before")
        return 1

    def task(x: int) -> int:
        ran.append(x)
        if x == 3 and fail[0]:
            raise ValueError("three is bad")
        return x

    @durable.workflow(store=store, run_id="src")
    def graph() -> list[int]:
        before()
        return durable.loop_over(task, [1, 2, 3], checkpoint_items=True)

    with pytest.raises(ValueError, match="three is bad"):
        graph()
    assert ran == ["before", 1, 2, 3]
    fail[0] = False
    ran.clear()
    forked = graph.fork("src", at=1, new_run_id="fork")
    assert (forked.value, forked.steps_replayed, ran) == ([1, 2, 3], 1, [1, 2, 3])
    ran.clear()
    resumed = graph.run()
    assert (resumed.value, resumed.steps_replayed, ran) == ([1, 2, 3], 1, [3])


def swapped(fn: Any) -> Any:
    """A decorator whose wrapper takes the wrapped function's parameters in
    the other order (functools.wraps makes inspect.signature report the
    wrapped function's)."""

    @functools.wraps(fn)
    def wrapper(b: Any, a: Any) -> Any:
        return fn(a, b)

    return wrapper


def scaled(fn: Any) -> Any:
    """A decorator that adds a parameter of its own to the wrapped function's."""

    @functools.wraps(fn)
    def wrapper(x: int, scale: int = 1) -> int:
        return int(fn(x)) * scale

    return wrapper


def test_joblib_func_with_signature_of_a_wrapper(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_memory_func_with_signature, test_memory_ignore_decorated: a
    cached function under a functools.wraps decorator is called through the
    wrapper, so a call is the wrapper's call. A wrapper whose parameters are
    not the wrapped function's (swapped, or one added) binds the call by its
    own: minus(1, 2) and minus(a=1, b=2), which the wrapper tells apart,
    are two entries (the second was served the first's output), and
    f(2, scale=3), which the wrapper accepts, is called (it was refused
    with a TypeError); a pass-through wrapper (*args, **kwargs) still binds
    by the wrapped function's signature (f(1) and f(x=1) are one call), but
    without its defaults: the wrapper may fill what a call leaves out, so
    g(1) and g(1, 0) are two calls (test_wrapper_defaults)."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[Any] = []

    @durable.step(cache=True)
    @swapped
    def minus(a: int, b: int) -> int:
        ran.append((a, b))
        return a - b

    plain = swapped(lambda a, b: a - b)
    assert (plain(1, 2), plain(a=1, b=2)) == (1, -1)
    assert (minus(1, 2), minus(a=1, b=2), minus(1, 2), minus(a=1, b=2)) == (1, -1, 1, -1)
    assert ran == [(2, 1), (1, 2)]

    @durable.step(cache=True)
    @scaled
    def f(x: int) -> int:
        ran.append(x)
        return x

    assert (f(2), f(2, scale=3), f(2, 3), f(x=2, scale=1)) == (2, 6, 6, 2)
    assert ran[2:] == [2, 2]

    def passing(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @durable.step(cache=True)
    @passing
    def g(x: int, y: int = 0) -> int:
        ran.append(("g", x))
        return x + y

    assert (g(1), g(x=1), g(1, 0), g(1, y=0)) == (1, 1, 1, 1)
    assert ran[4:] == [("g", 1), ("g", 1)]


def test_dbos_workflow_wrapped_by_a_decorator_with_its_own_parameters(store: durable.Store) -> None:
    """test_workflow_wrapped_by_custom_decorator with a decorator whose
    wrapper has parameters of its own: the run id is derived from the
    wrapper's binding of the call, so two calls the wrapper tells apart are
    two runs, never one run's recorded value returned for the other."""
    ran: list[Any] = []

    @durable.workflow(store=store)
    @swapped
    def minus(a: int, b: int) -> int:
        ran.append((a, b))
        return a - b

    assert (minus(1, 2), minus(a=1, b=2)) == (1, -1)
    assert (minus(1, 2), minus(a=1, b=2)) == (1, -1) and ran == [(2, 1), (1, 2)]
    assert len(minus.runs()) == 2


def test_dbos_max_parallel_workflows(store: durable.Store, clock: Any) -> None:
    """test_max_parallel_workflows: fifty async workflows started at once
    in one event loop run side by side: each one's first step waits until
    all fifty have arrived (it would never return if they ran one after
    another), then each sleeps durably. Every one completes with its own
    value, each step ran once, and called again they replay."""
    arrived: list[int] = []
    everyone = asyncio.Event()

    @durable.step
    async def arrive(i: int) -> int:
        arrived.append(i)
        if len(arrived) == 50:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 30)
        return i

    @durable.workflow(store=store)
    async def test_workflow(i: int) -> int:
        value = await arrive(i)
        await durable.asleep(5)
        return value

    async def all_fifty() -> list[int]:
        return list(await asyncio.gather(*(test_workflow(i) for i in range(50))))

    assert asyncio.run(all_fifty()) == list(range(50))
    assert sorted(arrived) == list(range(50)) and clock.slept == [5.0] * 50
    assert asyncio.run(all_fifty()) == list(range(50))
    assert len(arrived) == 50 and len(test_workflow.runs()) == 50


def test_prefect_cache_key_fn_arg_inputs_are_stable(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_cache_key_fn_arg_inputs_are_stable: foo(1, 2, 3), foo(1, b=2)
    and foo(c=3, a=1, b=2) are one call, so a key function over the inputs
    gives them one entry. Prefect hands the key function the bound
    parameters; durable calls it with the call's own arguments, so a key
    function taking the step's parameters (defaults included) binds them
    the same way: one computation, three equal results."""
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[int] = []

    @durable.step(cache=durable.Cache(key=lambda a, b, c=3: str((a, b, c))))
    def foo(a: int, b: int, c: int = 3) -> int:
        ran.append(a + b + c)
        return a + b + c

    assert (foo(1, 2, 3), foo(1, b=2), foo(c=3, a=1, b=2)) == (6, 6, 6)
    assert ran == [6]
    assert foo(1, 2, c=4) == 7 and ran == [6, 7]


def test_langgraph_multiple_interrupt_state_persistence(store: durable.Store) -> None:
    """test_multiple_interrupt_state_persistence: a node interrupting twice
    returns nothing until both answers are in; between the resumes the
    run's state holds the answers given so far and no output of the node
    (durable: the answered waits are recorded, the step after them is not);
    the last resume completes it with both answers."""
    ran: list[list[str]] = []

    @durable.step
    def node(steps: list[str]) -> list[str]:
        ran.append(steps)
        return steps

    @durable.workflow(store=store, run_id="1")
    def app() -> list[str]:
        first = durable.wait_for("resume")
        second = durable.wait_for("resume")
        return node([first, second])

    def state() -> list[tuple[str, Any]]:
        return [(s.name, s.value) for s in app.history("1") if s.position >= 0]

    with pytest.raises(durable.Suspended):
        app()
    assert state() == []
    with pytest.raises(durable.Suspended):
        app.resume("1", inputs={"resume": "step1"})
    assert state() == [("resume", "step1")] and ran == []
    assert app.resume("1", inputs={"resume": "step2"}).value == ["step1", "step2"]
    assert state() == [("resume", "step1"), ("resume", "step2"), (node.name, ["step1", "step2"])]
    assert ran == [["step1", "step2"]]


def test_langgraph_concurrent_execution_thread_safety(store: durable.Store) -> None:
    """test_concurrent_execution_thread_safety: ten threads invoking the
    graph at once, each on its own thread id, each get their own result and
    the node ran once per thread. Ten threads on one thread id (one run) run
    it once: told to wait, every caller gets that run's value (without
    wait=, the others are refused with RunLockedError while it runs)."""
    ran: list[int] = []
    arrived = threading.Barrier(10, timeout=30)

    @durable.step
    def slow_node(counter: int) -> int:
        ran.append(counter)
        return counter + 1

    @durable.workflow(store=store)
    def graph(counter: int, thread: int) -> dict[str, int]:
        return {"counter": slow_node(counter)}

    def run_all(call: Any) -> list[Any]:
        results: list[Any] = []

        def one(i: int) -> None:
            arrived.wait()
            results.append(call(i))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    assert run_all(lambda i: graph(0, i)) == [{"counter": 1}] * 10
    assert len(ran) == 10 and len(graph.runs()) == 10
    shared = graph.with_options(run_id="shared", wait=30)
    assert run_all(lambda i: shared(0, 0)) == [{"counter": 1}] * 10
    assert len(ran) == 11


def test_dbos_send_to_a_child_that_does_not_recv(store: durable.Store) -> None:
    """test_send_recv with the receiver a child workflow stopped by
    suspend() (no wait): the parent resumed with inputs= warns once, from
    the child that did not take them and says why (a suspend() takes new
    arguments); nothing before the pause ran again."""
    ran: list[str] = []

    @durable.step
    def prepare() -> str:
        ran.append("prepare")
        return "ready"

    @durable.workflow(store=store)
    def child(ok: bool = False) -> str:
        prepared = prepare()
        if not ok:
            durable.suspend("child paused")
        return prepared

    @durable.workflow(store=store, run_id="p")
    def parent() -> str:
        return child()

    with pytest.raises(durable.Suspended):
        parent()
    with pytest.warns(UserWarning) as told:
        with pytest.raises(durable.Suspended):
            parent.resume("p", inputs={"ok": True})
    (warning,) = [w for w in told if "no wait took" in str(w.message)]
    assert "run 'p.0' suspends again, at suspend('child paused')" in str(warning.message)
    assert "takes new arguments" in str(warning.message) and ran == ["prepare"]


PERSISTING = """
import os

import durable

@durable.step(cache=True)
def fast_func_with_conditional_complex_output(complex_output=True):
    with open(os.environ["PEERS6_LOG"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    return {"a": 1, "b": list(range(1000))} if complex_output else "simple output"
"""


def test_joblib_race_condition_when_persisting_output_in_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_store: durable.Store
) -> None:
    """test_cached_function_race_condition_when_persisting_output_2 with
    joblib's process workers (Parallel(n_jobs=2), loky): a cached function
    of a module called in two spawned processes at once, two keys, five
    calls. Every call gets a complete value (never a half-written entry);
    each key was computed at least once and at most once per call; the
    parent process is then served both without computing."""
    import importlib
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    (tmp_path / "peers6_persisting.py").write_text(PERSISTING)
    log = tmp_path / "log"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    monkeypatch.setenv("PEERS6_LOG", str(log))
    module = importlib.import_module("peers6_persisting")
    cached = module.fast_func_with_conditional_complex_output
    complex_output = {"a": 1, "b": list(range(1000))}
    flags = [True, False, True, False, True]
    try:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(2, mp_context=spawn) as pool:
            out = list(pool.map(cached, flags))
        assert out == [complex_output if f else "simple output" for f in flags]
        computed = len(log.read_text().split())
        assert 2 <= computed <= 5
        assert cached(True) == complex_output and cached(False) == "simple output"
        assert len(log.read_text().split()) == computed
    finally:
        sys.modules.pop("peers6_persisting", None)


class Anode:
    """LangGraph's stateful node object: each call flips its switch."""

    def __init__(self) -> None:
        self.switch = False

    def __call__(self, myval: int) -> dict[str, Any]:
        self.switch = not self.switch
        return {"myval": 2 if self.switch else 1, "otherval": self.switch}


def test_langgraph_run_from_checkpoint_with_a_stateful_node(store: durable.Store) -> None:
    """test_run_from_checkpoint_id_retains_previous_writes: one node object
    that flips its own state on each call serves two nodes; the graph loops
    until myval > 3, then is run again from an earlier checkpoint, where
    LangGraph goes on from the object as it is now (a new result, 5).
    durable completes the first run (warning that the steps changed their
    object), returns its value to the same call, and refuses the fork: a
    replay could not redo the object's change, so nothing is run from
    stale state (fail closed)."""
    thenode = Anode()
    node_one = durable.step(thenode, name="node_one", version="1")
    node_two = durable.step(thenode, name="node_two", version="1")

    @durable.workflow(store=store, run_id="thread")
    def graph(myval: int) -> dict[str, Any]:
        state: dict[str, Any] = {"myval": myval, "otherval": False}
        src = "node_one"
        while True:
            out = (node_one if src == "node_one" else node_two)(state["myval"])
            state = {"myval": state["myval"] + out["myval"], "otherval": out["otherval"]}
            if state["myval"] > 3:
                return state
            if state["otherval"]:
                src = "node_two" if src == "node_one" else "node_one"

    with pytest.warns(UserWarning, match="changed an object it was given"):
        assert graph(1) == {"myval": 4, "otherval": False}
    history = [(s.name, s.value) for s in graph.history("thread") if s.position >= 0]
    assert history == [
        ("node_one", {"myval": 2, "otherval": True}),
        ("node_two", {"myval": 1, "otherval": False}),
    ]
    assert graph(1) == {"myval": 4, "otherval": False} and thenode.switch is False
    with pytest.raises(durable.DefinitionChangedError, match="changed an object it was given"):
        graph.fork("thread", at=1)
    assert thenode.switch is False


RECOVER_CHILD = NOTE_HEAD + """
@durable.step
def node(name):
    note(name)
    return name

@durable.workflow
def child_workflow(x):
    first = node("child 1")
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return first + "+" + node("child 2")

@durable.workflow(run_id="parent")
def parent_workflow(x):
    return node("before") + "|" + child_workflow(x) + "|" + node("after")

which = {"run": None, "child": child_workflow, "parent": parent_workflow}[sys.argv[2]]
if which is None:
    print(parent_workflow("x"))
else:
    for run in which.recover():
        print(run.run_id, run.status, run.value)
"""


def test_dbos_recovery_of_a_child_then_its_parent_after_kill_9(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_recovery_attempts (a parent and its child both pending after
    the process died): killed with SIGKILL inside the child, both runs are
    left interrupted. Recovering the child's workflow first leaves the child
    to its parent, which is in the store (run alone, a child of a parent
    restarted meanwhile ran again from the start in the parent's resume);
    recovering the parent's finishes the child and then the parent: every
    node ran once."""
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(RECOVER_CHILD)

    def run(what: str, **env: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(script), str(log), what]
        return subprocess.run(argv, env=dict(child_env, **env), capture_output=True, text=True)

    assert run("run", CRASH="1").returncode == -9
    child = run("child")
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["parent.1", "interrupted", "None"]
    parent = run("parent")
    assert parent.returncode == 0, parent.stderr
    assert parent.stdout.split() == ["parent", "completed", "before|child", "1+child", "2|after"]
    assert log.read_text().splitlines() == ["before", "child 1", "child 2", "after"]
    assert run("parent").stdout == run("child").stdout == ""


# -- PraisonAI: tests/unit/agent/test_durable_run.py ------------------------------


CHARGE = NOTE_HEAD + """
@durable.step
def charge_card(amount):
    run = durable.current_run()
    note(f"{run.idempotency_key()} {run.attempt}")
    if os.environ.get("CRASH"):
        os.kill(os.getpid(), signal.SIGKILL)
    return "charged"

@durable.workflow(run_id="run-1")
def agent(amount):
    durable.sleep(0)
    return charge_card(amount)

print(agent(10))
"""


def test_praisonai_pending_call_reuses_stable_idempotency_key_after_kill_9(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """test_pending_call_reuses_stable_idempotency_key_after_resume, with
    a real crash: a tool call killed (SIGKILL) while in flight runs again on
    resume with the same idempotency key ("run-1:1/<digest>", the run, the
    step's position and its call), so the payment service can drop the duplicate; the killed
    try left no failure record, so the attempt is 0 both times. PraisonAI
    does not run an in-flight effectful tool again unless it is declared
    restart-safe; durable runs the unfinished step again (a crash costs the
    step in flight) and gives it the same key."""
    script, log = tmp_path / "charge.py", tmp_path / "log"
    script.write_text(CHARGE)
    argv = [sys.executable, str(script), str(log)]
    assert subprocess.run(argv, env=dict(child_env, CRASH="1"), capture_output=True).returncode == -9
    done = subprocess.run(argv, env=child_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["charged"]
    (first, tried), (again, tried_again) = (line.split() for line in log.read_text().splitlines())
    assert first == again and first.startswith("run-1:1/") and tried == tried_again == "0"


def test_praisonai_async_declared_tool_receives_durable_idempotency_key(store: durable.Store) -> None:
    """test_declared_tool_receives_durable_idempotency_key and its async
    twin: a tool (a step) reads the run's idempotency key, the same on a
    retry of the step; sync and async alike, keyed by their positions."""
    captured: list[tuple[str, str, int]] = []

    @durable.step(retries=1, retry_delay=0)
    def charge_card(amount: int) -> str:
        run = durable.current_run()
        assert run is not None
        captured.append(("charge", run.idempotency_key(), run.attempt))
        if run.attempt == 0:
            raise TimeoutError("no answer")
        return "charged"

    @durable.step
    async def send_email(to: str) -> str:
        run = durable.current_run()
        assert run is not None
        captured.append(("email", run.idempotency_key(), run.attempt))
        return "sent"

    @durable.workflow(store=store, run_id="run-1")
    async def agent() -> str:
        return await send_email("user@example.com")

    @durable.workflow(store=store, run_id="run-2")
    def sync_agent() -> str:
        return charge_card(10)

    assert asyncio.run(agent()) == "sent"
    assert sync_agent() == "charged"
    keyed = [(what, key.split("/")[0], attempt) for what, key, attempt in captured]
    assert keyed == [("email", "run-1:0", 0), ("charge", "run-2:0", 0), ("charge", "run-2:0", 1)]
    assert captured[1][1] == captured[2][1]  # a retry: the same call, the same key


# -- DBOS: tests/test_queue.py, through loop_over --------------------------------------


@pytest.mark.parametrize("concurrency", [1, 2, 3])
def test_dbos_queue_concurrency_limit(store: durable.Store, concurrency: int) -> None:
    """test_one_at_a_time, test_limiter (concurrency=): a queue's
    concurrency limit over a pool with more workers, as loop_over's
    max_concurrency: never more items in flight than the limit (at the
    limit, each item waits until the limit is reached, told by a condition,
    not by time), every item once, the results in order; a re-run replays
    the block."""
    from concurrent.futures import ThreadPoolExecutor

    lock = threading.Condition()
    in_flight: list[int] = []
    peak: list[int] = [0]
    ran: list[int] = []

    def work(i: int) -> int:
        with lock:
            in_flight.append(i)
            ran.append(i)
            peak[0] = max(peak[0], len(in_flight))
            lock.notify_all()
            # The first `concurrency` items wait for each other: the limit is reached.
            if i < concurrency:
                assert lock.wait_for(lambda: len(ran) >= concurrency, timeout=30)
            in_flight.remove(i)
        return i * 10

    @durable.workflow(store=store, run_id="queue")
    def queued() -> list[int]:
        with ThreadPoolExecutor(8) as pool:
            return durable.loop_over(
                work, list(range(12)), executor=pool, max_concurrency=concurrency
            )

    assert queued() == [i * 10 for i in range(12)]
    assert peak[0] == concurrency and sorted(ran) == list(range(12))
    assert queued() == [i * 10 for i in range(12)] and len(ran) == 12


def test_langgraph_parallel_interrupts_double(store: durable.Store) -> None:
    """test_parallel_interrupts_double: the parent sends each prompt to a
    subgraph (child runs, gathered), and each subgraph asks two questions
    at once (two parallel nodes interrupting, as asyncio tasks). The first
    call suspends; one resume answering all four completes every child and
    the parent, whose cleanup sees two answers per prompt, in call order;
    the work before the interrupts ran once per child."""
    ran: list[str] = []

    @durable.step
    async def prepare(prompt: str) -> str:
        ran.append(prompt)
        return prompt

    async def ask(name: str) -> Any:
        return durable.wait_for(name)

    @durable.workflow(store=store)
    async def child_graph(prompt: str) -> list[Any]:
        await prepare(prompt)
        human, dolphin = await asyncio.gather(ask(f"{prompt}/human"), ask(f"{prompt}/dolphin"))
        return [human, dolphin]

    @durable.workflow(store=store, run_id="parent")
    async def parent_graph(prompts: list[str]) -> list[Any]:
        answers = await asyncio.gather(*(child_graph(p) for p in prompts))
        inputs = [a for pair in answers for a in pair]
        assert len(inputs) == len(prompts) * 2  # cleanup
        return inputs

    prompts = ["a", "b"]
    with pytest.raises(durable.Suspended):
        asyncio.run(parent_graph(prompts))
    answers = {f"{p}/{who}": f"{p} {who}" for p in prompts for who in ("human", "dolphin")}
    done = asyncio.run(parent_graph.resume("parent", inputs=answers))
    assert done.value == ["a human", "a dolphin", "b human", "b dolphin"]
    assert sorted(ran) == ["a", "b"]
