"""A `loop_over` item's retry budget is the run's, as a plain step's is: a
run interrupted between an item's tries goes on with the tries left, one
that gave up gets a new budget, and the tries kept leave no record once
the block is recorded. Each case is held against the plain step's figure.
(The `kill -9` case: tests/test_fanout_retry_crash.py.)"""

from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path
from typing import Any

import pytest

import durable
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
