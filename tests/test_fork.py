"""Workflow.fork(): branch a new run from a past position, optionally
replacing the output recorded just before it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import runs

Calls = dict[str, list[Any]]


def make_chain(store: durable.Store, calls: Calls) -> Any:
    """Five steps; each records the input it saw, so a test can tell what
    ran and with which value."""

    def stage(label: str, fn: Any) -> Any:
        @durable.step(name=label)
        def run(x: Any) -> Any:
            calls.setdefault(label, []).append(x)
            return fn(x)

        return run

    add, double, label, stamp, last = (
        stage("add", lambda x: x + 1),
        stage("double", lambda x: x * 2),
        stage("label", lambda x: {"n": x}),
        stage("stamp", lambda d: {**d, "stamped": True}),
        stage("last", lambda d: f"{d['n']}/{d['stamped']}"),
    )

    @durable.workflow(name="chain", store=store)
    def chain(x: int, suffix: str = "") -> str:
        return last(stamp(label(double(add(x))))) + suffix

    return chain


@pytest.fixture
def store(tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path / "store")


def records(store: durable.Store, run_id: str) -> dict[str, bytes]:
    return store.load_records("chain", run_id)


def test_fork_at_3_with_mutate(store: durable.Store) -> None:
    calls: Calls = {}
    chain = make_chain(store, calls)
    assert chain.with_options(run_id="src")(1) == "4/True"
    source_records = records(store, "src")
    source_history = chain.history("src")
    calls.clear()

    seen: list[Any] = []

    def mutate(value: Any) -> Any:
        seen.append(value)
        return {"n": 100}

    run = chain.fork("src", at=3, new_run_id="what-if", mutate=mutate)
    assert seen == [{"n": 4}]  # the output recorded at position 2
    assert calls == {"stamp": [{"n": 100}], "last": [{"n": 100, "stamped": True}]}
    assert run.value == "100/True" and run.run_id == "what-if"
    assert (run.resumed_from_step, run.steps_replayed, run.steps_executed) == (3, 3, 2)
    # the source is untouched, record for record
    assert records(store, "src") == source_records
    assert chain.history("src") == source_history
    assert chain.with_options(run_id="src")(1) == "4/True"
    forked = chain.history("what-if")[1:]
    assert [s.preview for s in forked] == ["2", "4", "{'n': 100}", "{'n': 100, 'stamped': True}",
                                           "'100/True'"]  # fmt: skip


def test_the_two_histories_are_independent_afterwards(store: durable.Store) -> None:
    calls: Calls = {}
    chain = make_chain(store, calls)
    chain.with_options(run_id="src")(1)
    chain.fork("src", at=2, new_run_id="b")
    chain.delete("src")
    calls.clear()
    again = chain.resume("b")  # completed: returns its own recorded value
    assert again.value == "4/True" and calls == {}
    chain.with_options(run_id="src")(1)  # a fresh source: everything runs
    assert set(calls) == {"add", "double", "label", "stamp", "last"}
    assert [i.run_id for i in chain.runs()] == ["src", "b"]


def test_fork_overrides_merge_as_in_resume(store: durable.Store) -> None:
    calls: Calls = {}
    chain = make_chain(store, calls)
    chain.with_options(run_id="src")(1)
    calls.clear()
    run = chain.fork("src", at=4, suffix="!")
    assert run.value == "4/True!" and calls == {"last": [{"n": 4, "stamped": True}]}
    assert run.run_id.startswith("src-fork-")
    assert runs.read_manifest(store, "chain", run.run_id).extra["forked_from"] == "src"


def test_fork_at_0_reruns_everything_and_bad_positions_are_refused(store: durable.Store) -> None:
    calls: Calls = {}
    chain = make_chain(store, calls)
    chain.with_options(run_id="src")(1)
    calls.clear()
    assert chain.fork("src", at=0, new_run_id="all").value == "4/True"
    assert all(len(v) == 1 for v in calls.values()) and len(calls) == 5
    for at, kwargs in [(6, {}), (-1, {}), (0, {"mutate": lambda v: v})]:
        with pytest.raises(durable.ConfigurationError, match="out of range"):
            chain.fork("src", at=at, **kwargs)
    with pytest.raises(durable.ConfigurationError, match="already exists"):
        chain.fork("src", at=1, new_run_id="all")
    with pytest.raises(durable.RunNotFoundError):
        chain.fork("ghost", at=1)
    assert sorted(i.run_id for i in chain.runs()) == ["all", "src"]


def test_fork_copies_blobs_and_keeps_signatures_valid(tmp_path: Path) -> None:
    signed = durable.open_store(tmp_path / "signed", signing_key="k" * 32, blob_threshold=32)

    @durable.step
    def big(n: int) -> str:
        return "y" * n

    @durable.step
    def echo(text: str) -> str:
        return text + "!"

    @durable.step
    def size(text: str) -> int:
        return len(text)

    @durable.workflow(name="blobby", store=signed)
    def blobby(n: int) -> int:
        return size(echo(big(n)))

    blobby.with_options(run_id="src")(200)
    run = blobby.fork("src", at=2, new_run_id="f", mutate=lambda text: text * 2)
    assert run.value == 402 and run.steps_replayed == 2
    blobs = list((tmp_path / "signed" / "blobby" / "f" / "blobs").iterdir())
    assert len(blobs) == 2  # position 0's, copied; position 1's replacement
    assert [s.output_size for s in blobby.history("f")][1:3] == [202, 405]  # msgpack str8 and str16 headers
    assert blobby.with_options(run_id="src")(200) == 201


def test_mutate_needs_a_stored_value(store: durable.Store) -> None:
    @durable.step(persist=False)
    def token() -> str:
        return "secret"

    @durable.step
    def use(t: str) -> int:
        return len(t)

    @durable.workflow(name="chain", store=store)
    def secretive() -> int:
        return use(token())

    secretive.with_options(run_id="s")()
    with pytest.raises(durable.ConfigurationError, match="persist=False"):
        secretive.fork("s", at=1, new_run_id="t", mutate=lambda v: v)
    with pytest.raises(ZeroDivisionError):
        secretive.fork("s", at=2, new_run_id="t", mutate=lambda v: 1 / 0)
    assert [i.run_id for i in secretive.runs()] == ["s"]
    assert store.list("chain/t/") == []  # nothing half-made is left to block the id
    assert secretive.fork("s", at=2, new_run_id="t", mutate=lambda v: v * 2).value == 12


def test_a_mutate_result_that_cannot_be_recorded_says_what_to_fix(store: durable.Store) -> None:
    import threading

    @durable.step
    def one() -> int:
        return 1

    @durable.workflow(name="lockout", store=store)
    def flow() -> int:
        return one()

    flow.with_options(run_id="s")()
    with pytest.raises(durable.SerializationError) as refused:
        flow.fork("s", at=1, new_run_id="t", mutate=lambda v: threading.Lock())
    message = str(refused.value)
    assert "mutate()" in message and "Nothing was forked" in message
    assert "persist=False" not in message  # no step to mark: mutate() made the value
    assert [i.run_id for i in flow.runs()] == ["s"]


def test_async_workflows_fork_too(store: durable.Store) -> None:
    seen: list[int] = []

    @durable.step
    async def inc(x: int) -> int:
        seen.append(x)
        return x + 1

    @durable.workflow(name="chain", store=store)
    async def counter(x: int) -> int:
        return await inc(await inc(await inc(x)))

    assert asyncio.run(counter.with_options(run_id="a")(0)) == 3
    seen.clear()
    run = asyncio.run(counter.fork("a", at=2, mutate=lambda v: v * 10))
    assert run.value == 21 and seen == [20]  # position 1 recorded 2; mutated to 20


def test_a_fork_that_replaced_an_answer_takes_the_new_one_as_the_recorded_answer(
    store: durable.Store,
) -> None:
    """`mutate` on a wait_for position replaces the answer (as LangGraph's
    update_state before a fork): the new answer is the recorded one, so it
    is accepted again as a repeat, and the replaced one is refused."""
    ran: list[str] = []

    @durable.step
    def act(x: str) -> str:
        ran.append(x)
        return x

    @durable.workflow(store=store, run_id="q")
    def questions() -> str:
        first = act(durable.wait_for("u"))
        return first + act(durable.wait_for("v"))

    with pytest.raises(durable.Suspended):
        questions()
    with pytest.raises(durable.Suspended, match="'v'"):
        questions.resume("q", inputs={"u": "old"})
    with pytest.raises(durable.Suspended, match="'v'"):
        questions.fork("q", at=1, new_run_id="f", mutate=lambda answer: "new")
    assert questions.resume("f", inputs={"u": "new", "v": "b"}).value == "newb"
    with pytest.raises(durable.ConfigurationError, match="already recorded at position 0"):
        questions.resume("f", inputs={"u": "old"})
    assert ran == ["old", "new", "b"]


@pytest.mark.parametrize("at", ["1", 1.0, None, True])
def test_a_fork_position_that_is_not_an_int_is_a_clear_error(
    store: durable.Store, at: Any
) -> None:
    calls: Calls = {}
    chain = make_chain(store, calls)
    chain.with_options(run_id="src")(1)
    with pytest.raises(durable.ConfigurationError, match="position to fork at"):
        chain.fork("src", at=at)
    assert [i.run_id for i in chain.runs()] == ["src"]  # nothing was made


def test_the_advice_for_a_taken_new_run_id_works(tmp_path: Path) -> None:
    # "delete it first (durable rm taken)" failed with "exists in several
    # workflows" when another workflow had a run of that id too.
    from durable._cli.main import main

    store = durable.open_store(tmp_path / "s")
    calls: Calls = {}
    chain = make_chain(store, calls)
    chain.with_options(run_id="src")(1)
    chain.with_options(run_id="taken")(2)

    @durable.workflow(name="other", store=store, run_id="taken")
    def other() -> int:
        return 0

    other()
    with pytest.raises(durable.ConfigurationError, match="already exists") as refused:
        chain.fork("src", at=4, new_run_id="taken")
    advice = re.search(r"\(durable (rm [^)]*)\)", str(refused.value))
    assert advice is not None
    assert main(["--store", str(tmp_path / "s"), *advice[1].split()]) == 0
    calls.clear()
    assert chain.fork("src", at=4, new_run_id="taken").value == "4/True"
    assert calls == {"last": [{"n": 4, "stamped": True}]}
    assert [i.run_id for i in other.runs()] == ["taken"]
