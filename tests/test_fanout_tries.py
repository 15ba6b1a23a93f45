"""A `loop_over` item's retry budget is the run's, as a plain step's is: a
run interrupted between an item's tries goes on with the tries left, one
that gave up gets a new budget, and the tries kept leave no record once
the block is recorded. Each case is held against the plain step's figure.
(The `kill -9` case: tests/test_fanout_retry_crash.py.)"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._core.identity import value_digest
from tests.fanout_work import item_indexes

tries: list[int] = []
outcome: dict[int, str] = {}  # try number (from 1) -> "ok" or "stop": else it fails


@durable.step(name="flaky", retries=2, retry_delay=0)
def flaky(x: int) -> int:
    tries.append(x)
    n = len(tries)
    if outcome.get(n) == "stop":  # a Ctrl-C during this try: the run is interrupted
        raise KeyboardInterrupt
    if outcome.get(n) == "ok":
        return x * 10
    raise ValueError(f"try {n}")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    tries.clear()
    outcome.clear()


def _flow(store: durable.Store, kind: str) -> Any:
    @durable.workflow(store=store, run_id="r", name=kind)
    def flow() -> Any:
        if kind == "plain":
            return flaky(1)
        pool = cf.ThreadPoolExecutor(2) if kind == "threads" else None
        return durable.loop_over(flaky, [1], executor=pool, checkpoint_items=kind == "kept")

    return flow


KINDS = ["plain", "items", "threads", "kept"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_interrupted_between_tries_makes_only_the_tries_left(tmp_path: Path, kind: str) -> None:
    flow = _flow(durable.open_store(str(tmp_path)), kind)
    outcome[3] = "stop"
    with pytest.raises(KeyboardInterrupt):
        flow()
    with pytest.raises(ValueError, match="try 4"):
        flow()
    assert len(tries) == 4  # two failed, one cut short, the last of the budget


@pytest.mark.parametrize("kind", KINDS)
def test_a_call_that_gave_up_gets_a_budget_of_its_own(tmp_path: Path, kind: str) -> None:
    flow = _flow(durable.open_store(str(tmp_path)), kind)
    with pytest.raises(ValueError, match="try 3"):
        flow()
    outcome[5] = "ok"
    assert flow() in (10, [10])
    assert len(tries) == 5


@pytest.mark.parametrize("kind", KINDS[1:])
def test_the_tries_an_item_kept_go_with_its_block(tmp_path: Path, kind: str) -> None:
    store = durable.open_store(str(tmp_path))
    flow = _flow(store, kind)
    outcome[2] = "stop"
    with pytest.raises(KeyboardInterrupt):
        flow()
    assert item_indexes(store, kind, "r") == {0}  # the first failed try
    # A failed try is no item's result: history counts none checkpointed.
    assert [s.preview for s in flow.history("r") if s.kind == "loop"] == ["0 items checkpointed"]
    outcome[3] = "ok"
    assert flow() == [10]
    assert len(tries) == 3
    assert item_indexes(store, kind, "r") == set()


seen: list[tuple[int, int, str]] = []


@durable.step(name="keyed", retries=2, retry_delay=0)
def keyed(x: int) -> int:
    run = durable.current_run()
    assert run is not None
    seen.append((x, run.attempt, run.idempotency_key()))
    n = sum(1 for s in seen if s[0] == x)
    if n == 2 and x == 1 and outcome.get(0) == "stop":
        raise KeyboardInterrupt  # item 1's second try is cut short
    if n == 1:
        raise ValueError(f"item {x} fails its first try")
    return x


@pytest.mark.parametrize("kind", KINDS)
def test_an_item_knows_its_try_and_its_own_idempotency_key(tmp_path: Path, kind: str) -> None:
    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r", name=kind)
    def flow() -> Any:
        if kind == "plain":
            return [keyed(1), keyed(2)]
        pool = cf.ThreadPoolExecutor(2) if kind == "threads" else None
        return durable.loop_over(keyed, [1, 2], executor=pool, checkpoint_items=kind == "kept")

    seen.clear()
    outcome[0] = "stop"
    with pytest.raises(KeyboardInterrupt):
        flow()
    outcome.clear()
    assert flow() == [1, 2]
    # Item by item: tries numbered in the run (a try cut short is made again
    # under its number), one key for all of an item's tries, another item's
    # key for another item (a plain step's is its position's). On a pool,
    # item 2's second try may have finished unkept before the Ctrl-C, or its
    # failed first try not been kept yet: then it is made again under its
    # number, as a try a Ctrl-C cut short is.
    key = {1: f"r:0/{item_key(1)}", 2: f"r:0/{item_key(2)}"}
    if kind == "plain":  # a step's: its position, then its call's digest
        key = {x: next(k for y, _, k in seen if y == x) for x in (1, 2)}
        assert key[1].startswith("r:0/") and key[2].startswith("r:1/")
    assert [(a, k) for x, a, k in seen if x == 1] == [(0, key[1]), (1, key[1]), (1, key[1])]
    twos = {(a, k) for x, a, k in seen if x == 2}
    assert twos == {(0, key[2]), (1, key[2])} or (kind == "threads" and twos == {(0, key[2])})


moved: list[str] = []


@durable.step(name="moved", retries=2, retry_delay=0)
def fails_b(x: str) -> str:
    moved.append(x)
    n = moved.count("B")
    if x == "B" and n in outcome.values():
        raise KeyboardInterrupt  # this try of B is cut short
    if x == "B":
        raise ValueError(f"B try {n}")
    return x


def test_an_item_moved_on_resume_keeps_the_tries_it_made(tmp_path: Path) -> None:
    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r", name="moved")
    def flow(items: list[str]) -> Any:
        return durable.loop_over(fails_b, items, checkpoint_items=True)

    moved.clear()
    outcome.update(a=3, b=4)  # B's third and fourth tries are cut short
    with pytest.raises(KeyboardInterrupt):
        flow(["A", "B"])  # A is kept; B failed twice
    # Resumed with B first: A's result goes to B's old name, which held B's tries.
    with pytest.raises(KeyboardInterrupt):
        flow.resume("r", items=["B", "A"])
    with pytest.raises(ValueError, match="B try 5"):
        flow.resume("r", items=["B", "A"])
    assert moved == ["A", "B", "B", "B", "B", "B"]  # 2 failed, 2 cut short, the last of 3


@pytest.mark.parametrize("kind", ["items", "kept"])
def test_an_equal_item_does_not_spend_the_tries_of_another(tmp_path: Path, kind: str) -> None:
    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r", name=kind)
    def flow() -> Any:
        return durable.loop_over(flaky, [1, 1], checkpoint_items=kind == "kept")

    outcome.update({3: "stop", 4: "ok", 7: "ok"})  # item 0 is cut short at its last try
    with pytest.raises(KeyboardInterrupt):
        flow()
    # Item 0 makes its last try; item 1 its own three (it had one, as item 0's).
    assert flow() == [10, 10]
    assert len(tries) == 7


def item_key(item: object) -> str:
    return value_digest(item)[:16]


receipts: dict[str, str] = {}  # a payment service, deduplicating by key


@durable.step(name="pay")
def pay(what: str) -> str:
    run = durable.current_run()
    assert run is not None
    receipt = receipts.setdefault(run.idempotency_key(), f"receipt for {what}")
    if what == "B" and outcome.get(0) == "stop":
        raise KeyboardInterrupt  # B paid; the run stops before its result is kept
    return receipt


@pytest.mark.parametrize("kind", ["items", "kept", "threads"])
def test_an_item_keeps_its_idempotency_key_when_the_items_move(tmp_path: Path, kind: str) -> None:
    """The key follows the item, not its index: resumed with B first, B
    was given A's key ("r:0/0") and the service answered it with A's
    receipt. Equal items are two calls (two charges of 5): two keys."""

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r", name=kind)
    def flow(items: list[str]) -> Any:
        pool = cf.ThreadPoolExecutor(1) if kind == "threads" else None
        return durable.loop_over(pay, items, executor=pool, checkpoint_items=kind == "kept")

    receipts.clear()
    outcome[0] = "stop"
    with pytest.raises(KeyboardInterrupt):
        flow(["A", "B"])
    outcome.clear()
    run = flow.resume("r", items=["B", "A", "5", "5"])
    assert run.value == ["receipt for B", "receipt for A", "receipt for 5", "receipt for 5"]
    five = f"r:0/{item_key('5')}"
    assert sorted(receipts) == sorted([f"r:0/{item_key('A')}", f"r:0/{item_key('B')}", five, five + "-1"])


def what_the_worker_sees(x: int) -> tuple[int, str | None, int | None]:
    run = durable.current_run()
    return (x, None, None) if run is None else (x, run.run_id, run.position)


# Slow: fork() with pytest's threads alive warns of deadlocks on 3.12+.
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="no fork on Windows")
def test_a_forked_process_pools_item_sees_no_run(tmp_path: Path) -> None:
    """The docs say a process-pool item has no live run. A pool with the
    fork start method made the worker a copy of the workflow process: its
    items saw the run as it was at the fork (the same position for every
    item, however far the body had gone), a key to build idempotency on
    that names no item."""

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def flow() -> Any:
        fork = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(1, mp_context=fork) as pool:
            first = durable.loop_over(what_the_worker_sees, [1, 2], executor=pool)
            return first + durable.loop_over(what_the_worker_sees, [3], executor=pool)

    assert flow() == [(1, None, None), (2, None, None), (3, None, None)]
