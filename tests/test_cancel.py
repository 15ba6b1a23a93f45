"""Cancel: a create-only marker in the run's folder; the holder ends the run
`cancelled` at its next operation boundary (looked for at most once per
`cancel_poll` seconds), a run nobody holds is marked at once, and only a
restart runs a cancelled run again. Local and S3 (moto)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable import events
from durable._storage.keys import cancel_key

from .clikit import child_env, counts, read_until, spawn, write_flow
from .clikit import durable as durable_cli
from .conftest import Place


def _flow(
    store: durable.Store, ran: Counter[str], block_in: str | None = None
) -> tuple[durable.Workflow[[], int], threading.Event, threading.Event]:
    """one() + two() + three(); the step named `block_in` waits for `go`
    after setting `entered`, so that another thread can act meanwhile."""
    entered, go = threading.Event(), threading.Event()

    def step_named(name: str, value: int) -> durable.Step[[], int]:
        @durable.step(name=name)
        def body() -> int:
            ran[name] += 1
            if name == block_in:
                entered.set()
                assert go.wait(60)
            return value

        return body

    one, two, three = step_named("one", 1), step_named("two", 2), step_named("three", 3)

    @durable.workflow(store=store, run_id="c1")
    def flow() -> int:
        return one() + two() + three()

    return flow, entered, go


def _cancel_while_blocked(
    flow: durable.Workflow[[], int], entered: threading.Event, go: threading.Event
) -> list[BaseException | int]:
    """Run flow in a thread; cancel it from here while its step is blocked."""
    outcome: list[BaseException | int] = []

    def run() -> None:
        try:
            outcome.append(flow())
        except BaseException as e:
            outcome.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    assert entered.wait(60)
    asked = flow.cancel("c1")
    assert asked.status == "cancelling" and asked.holder  # the lease is held there
    go.set()
    worker.join()
    return outcome


def test_the_holder_stops_at_the_next_boundary(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")  # look at every boundary
    store = place.open()
    ran: Counter[str] = Counter()
    flow, entered, go = _flow(store, ran, block_in="two")
    (outcome,) = _cancel_while_blocked(flow, entered, go)
    assert isinstance(outcome, durable.Cancelled)
    assert ran == Counter(one=1, two=1)  # the step in flight finished and was recorded
    (info,) = flow.runs()
    assert (info.status, info.steps) == ("cancelled", 2)
    with pytest.raises(durable.Cancelled):  # not resumed...
        flow.resume("c1")
    with pytest.raises(durable.Cancelled):
        flow()
    assert ran == Counter(one=1, two=1)
    fresh = _flow(store, ran)[0].with_options(restart=True)  # ...unless restarted
    assert fresh() == 6
    assert ran == Counter(one=2, two=2, three=1)


@pytest.mark.parametrize("checkpoint", [True, False])
def test_a_cancel_stops_a_loop_over_block_between_its_items(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, checkpoint: bool
) -> None:
    # The block was one operation: `durable cancel` of a run in a long
    # loop_over (a Dask fan-out) took effect only once every item had run.
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[int] = []

    @durable.step
    def item(i: int) -> int:
        ran.append(i)
        if i == 1:
            assert flow.cancel("b").status == "cancelling"  # while this run holds it
        return i

    @durable.workflow(store=store, run_id="b")
    def flow() -> list[int]:
        return durable.loop_over(item, range(6), checkpoint_items=checkpoint)

    with pytest.raises(durable.Cancelled):
        flow()
    assert ran == [0, 1]  # item 1 finished; no later item started
    assert flow.runs()[0].status == "cancelled"


def test_a_cancel_lets_the_items_in_flight_on_a_pool_finish_and_starts_none(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a graceful stop does: the items running beside the one that saw the
    # cancel finish and are kept (before, the block was left at once with
    # them still running, their cache writes after the run's end).
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[int] = []
    together, asked = threading.Barrier(4), threading.Event()

    @durable.step
    def item(i: int) -> int:
        ran.append(i)
        together.wait(60)  # items 0-3 are all in flight
        if i == 0:
            assert flow.cancel("t").status == "cancelling"
            asked.set()
        assert asked.wait(60)
        return i

    @durable.workflow(store=store, run_id="t")
    def flow() -> list[int]:
        with ThreadPoolExecutor(4) as pool:
            return durable.loop_over(
                item, range(8), executor=pool, checkpoint_items=True, max_concurrency=4
            )

    with pytest.raises(durable.Cancelled):
        flow()
    assert sorted(ran) == [0, 1, 2, 3]
    (block,) = [s for s in flow.history("t") if s.kind == "loop"]
    assert block.preview == "4 items checkpointed"


def test_a_cancel_stops_an_async_loop_over_block_between_its_items(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: list[int] = []

    @durable.step
    async def item(i: int) -> int:
        ran.append(i)
        if i == 1:
            assert flow.cancel("a").status == "cancelling"
        return i

    @durable.workflow(store=store, run_id="a")
    async def flow() -> list[int]:
        return await durable.loop_over(item, range(6), max_concurrency=1)

    with pytest.raises(durable.Cancelled):
        asyncio.run(flow())
    assert ran == [0, 1]
    assert flow.runs()[0].status == "cancelled"


def test_a_marker_its_holder_never_saw_cancels_the_resume(place: Place) -> None:
    """`durable cancel` found the run held, wrote its marker, and the holder
    died before it looked: the next start sees the marker (on object stores
    in the listing it reads the records with, not by a read of its own) and
    runs nothing."""
    store = place.open()
    ran: Counter[str] = Counter()
    fail = {"now": True}

    @durable.step
    def first() -> int:
        ran["first"] += 1
        if fail["now"]:
            raise RuntimeError("the holder goes down")
        return 1

    @durable.workflow(store=store, run_id="m1")
    def flow() -> int:
        return first()

    with pytest.raises(RuntimeError):
        flow()
    assert store.create(cancel_key(flow.name, "m1"), b"{}")  # as durable cancel writes it
    fail["now"] = False
    other = place.open(own_client=True)  # another process's view
    with pytest.raises(durable.Cancelled):
        flow.with_options(store=other).resume("m1")
    assert ran == Counter(first=1)
    assert flow.runs()[0].status == "cancelled"


def test_the_marker_is_read_at_most_once_per_interval_and_at_the_runs_end(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "3600")
    ran: Counter[str] = Counter()
    flow, entered, go = _flow(local_store, ran, block_in="one")
    # No store read per step: two and three start, not seeing the mark; the
    # run's end looks whatever the interval, so the cancel taken ("cancelling")
    # ends it cancelled, not completed (it completed with 6: durable cancel
    # during a live run, faults10).
    (outcome,) = _cancel_while_blocked(flow, entered, go)
    assert isinstance(outcome, durable.Cancelled)
    assert ran == Counter(one=1, two=1, three=1)
    assert flow.runs()[0].status == "cancelled"


def test_a_cancel_its_completed_attempt_never_saw_does_not_cancel_a_later_call(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A completed run cannot be cancelled. A cancel that read the run as
    running, then wrote its marker after the holder's last look (the run's
    end), is over with that attempt: its marker stayed, and the run's next
    call that went on (new arguments under on_change="rerun") ended
    `cancelled`, long after. The marker is planted as that cancel leaves it."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "3600")
    ran: Counter[str] = Counter()

    @durable.step
    def work(x: int) -> int:
        ran[f"work{x}"] += 1
        return x * 10

    @durable.workflow(store=local_store, run_id="late", on_change="rerun")
    def flow(x: int) -> int:
        return work(x)

    assert flow(1) == 10 and flow.runs()[0].status == "completed"
    local_store.create(cancel_key(flow.name, "late"), b'{"since": 0}')  # the race's marker
    assert flow(2) == 20
    assert flow.runs()[0].status == "completed" and ran == Counter(work1=1, work2=1)
    assert not local_store.cancel_marked(flow.name, "late")


def test_a_run_nobody_holds_is_cancelled_at_once(store: durable.Store) -> None:
    ran: Counter[str] = Counter()
    fail = {"now": True}

    @durable.step
    def first() -> int:
        ran["first"] += 1
        return 1

    @durable.step
    def second(x: int) -> int:
        ran["second"] += 1
        if fail["now"]:
            raise RuntimeError("down")
        return x + 1

    @durable.workflow(store=store, run_id="f1")
    def flow() -> int:
        return second(first())

    with pytest.raises(RuntimeError):
        flow()
    done = flow.cancel("f1")
    assert (done.status, done.holder) == ("cancelled", None)
    assert flow.runs()[0].status == "cancelled"
    assert flow.cancel("f1").status == "cancelled"  # again: nothing changes
    fail["now"] = False
    assert flow.recover() == []  # a cancelled run is not recovered either
    with pytest.raises(durable.Cancelled):
        flow.resume("f1")
    assert ran == Counter(first=1, second=1)


def test_a_run_cancelled_after_its_last_step_ends_cancelled(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's end is a boundary too: the holder told `cancelling` while
    in its last step does not complete the run afterwards."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    store = place.open()
    ran: Counter[str] = Counter()
    flow, entered, go = _flow(store, ran, block_in="three")
    (outcome,) = _cancel_while_blocked(flow, entered, go)
    assert isinstance(outcome, durable.Cancelled)
    assert ran == Counter(one=1, two=1, three=1)
    (info,) = flow.runs()
    assert (info.status, info.steps) == ("cancelled", 3)
    with pytest.raises(durable.Cancelled):
        flow.resume("c1")


def test_a_completed_run_cannot_be_cancelled(store: durable.Store) -> None:
    @durable.workflow(store=store, run_id="done")
    def flow() -> int:
        return 1

    flow()
    with pytest.raises(durable.ConfigurationError, match="completed"):
        flow.cancel("done")
    with pytest.raises(durable.RunNotFoundError):
        flow.cancel("nope")
    assert flow() == 1


def _cancel_from_another_process(tmp: Path, env: dict[str, str]) -> None:
    holder = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--var", "n=1",
                   env=dict(env, FLOW_BLOCK_AT="2", DURABLE_CANCEL_POLL="0"))  # fmt: skip
    try:
        read_until(holder.stdout, "step 2 started")
        asked = durable_cli(tmp, "cancel", "k1", "--json", env=env)
        assert asked.returncode == 0, asked.stderr
        assert json.loads(asked.stdout)["status"] == "cancelling"
        holder.stdin.write(b"go\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert holder.wait(timeout=60) == 4
        assert b"was cancelled" in holder.stderr.read()  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()
    assert counts(tmp) == {"s1": 1, "s2": 1}  # s3 never started
    shown = durable_cli(tmp, "show", "k1", "--json", env=env)
    doc = json.loads(shown.stdout)
    assert doc["status"] == "cancelled" and doc["completedSteps"] == 2
    again = durable_cli(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--resume", env=env)
    assert again.returncode == 4 and counts(tmp) == {"s1": 1, "s2": 1}
    recovered = durable_cli(tmp, "recover", "flow.py:pipeline", "--json", env=env)
    assert recovered.returncode == 0 and json.loads(recovered.stdout) == []
    fresh = durable_cli(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--var", "n=1",
                        "--restart", env=env)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert counts(tmp) == {"s1": 2, "s2": 2, "s3": 1, "s4": 1, "s5": 1}


@pytest.mark.slow
def test_durable_cancel_from_another_process_local(tmp_path: Path) -> None:
    write_flow(tmp_path)
    _cancel_from_another_process(tmp_path, child_env(tmp_path))


@pytest.mark.slow
def test_durable_cancel_from_another_process_s3(tmp_path: Path, s3_url: str) -> None:
    write_flow(tmp_path)
    _cancel_from_another_process(tmp_path, child_env(tmp_path, DURABLE_STORE=s3_url))


CHILD_FLOW = """
import os
import durable
from durable import events

@durable.step
def work():
    if os.environ.get("FAIL"):
        raise RuntimeError("the child fails")
    return 1

@durable.workflow(name="kid")
def child():
    return work()

@durable.workflow(name="parent")
def parent():
    return child() + 1
"""


@pytest.mark.slow
def test_a_restarted_parent_runs_its_cancelled_child_afresh(tmp_path: Path) -> None:
    """A restart keeps nothing of the discarded run, its child runs included:
    a child the user cancelled runs afresh under the restarted parent, as a
    restart of the child itself would run it."""
    (tmp_path / "family.py").write_text(CHILD_FLOW)
    env = child_env(tmp_path)
    failed = durable_cli(tmp_path, "run", "family.py:parent", "--run-id", "p",
                         env=dict(env, FAIL="1"))  # fmt: skip
    assert failed.returncode != 0
    cancelled = durable_cli(tmp_path, "cancel", "p.0", "--workflow", "kid", env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    resumed = durable_cli(tmp_path, "run", "family.py:parent", "--run-id", "p", "--resume",
                          env=env)  # fmt: skip
    assert resumed.returncode != 0 and "p.0" in resumed.stdout + resumed.stderr
    again = durable_cli(tmp_path, "run", "family.py:parent", "--run-id", "p", "--restart", env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["2"]
    listed = durable_cli(tmp_path, "runs", "kid", "--json", env=env)
    assert [r["status"] for r in json.loads(listed.stdout)] == ["completed"], listed.stdout


def test_a_cancelled_child_leaves_its_parent_resumable_once_removed(
    local_store: durable.Store,
) -> None:
    """Cancelling a child run (by its own run id) stops its parent, but the
    parent was not cancelled: it ends failed, and once the child is removed
    a resume runs the child afresh and replays the parent's finished steps."""
    ran: Counter[str] = Counter()

    @durable.step(name="prep")
    def prep() -> int:
        ran["prep"] += 1
        return 1

    @durable.workflow(name="kid", store=local_store)
    def kid() -> str:
        return durable.wait_for("ok")

    @durable.workflow(name="parent", store=local_store, run_id="p")
    def parent() -> str:
        return f"{prep()}{kid()}"

    with pytest.raises(durable.Suspended):
        parent()
    assert kid.cancel("p.1").status == "cancelled"
    with pytest.raises(durable.Cancelled) as stopped:
        parent.resume("p", inputs={"ok": "yes"})
    assert stopped.value.run_id == "p.1"
    statuses = {i.run_id: i.status for i in [*parent.runs(), *kid.runs()]}
    assert statuses == {"p": "failed", "p.1": "cancelled"}
    kid.delete("p.1")
    assert parent.resume("p", inputs={"ok": "yes"}).value == "1yes"
    assert ran == Counter(prep=1)


def test_a_cancelled_run_ends_with_an_event_and_its_span(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subscribers are told the run ended cancelled; before, the last event
    they saw was the step's (and the tracing consumer left the run's span
    open: tests/test_tracing.py)."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    ran: Counter[str] = Counter()
    flow, entered, go = _flow(store, ran, block_in="two")
    seen: list[events.Event] = []
    with durable.on_event(seen.append):
        (outcome,) = _cancel_while_blocked(flow, entered, go)
    assert isinstance(outcome, durable.Cancelled)
    ends = [e for e in seen if not isinstance(e, events.OperationEvent)]
    assert [type(e).__name__ for e in ends] == ["RunStarted", "RunCancelled"]
    assert (ends[1].run_id, ends[1].workflow) == ("c1", flow.name)
