"""Checkpointed `loop_over` items whose list changed between calls (an item
added, removed, moved or replaced): each item's kept result is found by the
item's identity, never handed to another item, and never lost to a result
kept for another item at the same index. Executions are counted."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.fanout_work import item_indexes

ran: list[int] = []
failing: set[int] = set()


def tenfold(n: int) -> int:
    ran.append(n)
    if n in failing:
        raise ValueError(f"item {n} fails")
    return n * 10


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()
    failing.clear()


def fmt(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _flow(store: durable.Store) -> Any:
    @durable.workflow(store=store, run_id="r1", name="items")
    def fan(items: list[int]) -> list[int]:
        return durable.loop_over(tenfold, items, checkpoint_items=True)

    return fan


def _interrupted(fan: Any, items: list[int], at: int) -> None:
    """Run the block until the item `at` fails: the items before it are kept."""
    failing.add(at)
    with pytest.raises(ValueError, match=f"item {at} fails"):
        fan(items)
    failing.clear()


def test_a_result_kept_where_another_item_was_kept_before_is_not_lost(tmp_path: Path) -> None:
    fan = _flow(durable.open_store(str(tmp_path)))
    _interrupted(fan, [1, 2, 3, 4], at=3)  # kept: 1 at index 0, 2 at index 1
    _interrupted(fan, [5, 2, 3, 4], at=4)  # 5 replaces 1 at index 0
    assert ran == [1, 2, 3, 5, 3, 4]
    assert fan([5, 2, 3, 4]) == [50, 20, 30, 40]
    assert ran[6:] == [4]  # 5 and 3 were kept: only 4 runs again


@pytest.mark.parametrize(
    "now",
    [[2, 1, 3, 4], [0, 1, 2, 3, 4], [2, 3, 4], [1, 1, 2, 2, 3]],
    ids=["moved", "added", "removed", "duplicated"],
)
def test_kept_items_are_found_by_identity_not_index(tmp_path: Path, now: list[int]) -> None:
    store = durable.open_store(str(tmp_path))
    fan = _flow(store)
    _interrupted(fan, [1, 2, 3, 4], at=3)
    assert ran == [1, 2, 3]
    assert fan(now) == [n * 10 for n in now]
    # 1 and 2 were kept, once each: one copy of each, at any index, is not run again.
    assert Counter(ran[3:]) == Counter(now) - Counter([1, 2])
    assert item_indexes(store, "items", "r1") == set()


def test_a_moved_item_is_kept_at_its_new_index_across_a_second_failure(tmp_path: Path) -> None:
    fan = _flow(durable.open_store(str(tmp_path)))
    _interrupted(fan, [1, 2, 3, 4], at=3)
    _interrupted(fan, [2, 1, 3, 4], at=4)  # swapped: each kept result moves with its item
    assert fan([2, 1, 3, 4]) == [20, 10, 30, 40]
    assert ran == [1, 2, 3, 3, 4, 4]


def test_rebase_never_hands_an_item_another_items_result(tmp_path: Path) -> None:
    fan = _flow(durable.open_store(str(tmp_path)))
    _interrupted(fan, [1, 2, 3, 4], at=3)
    assert fan.with_options(rebase=True)([2, 7, 3, 4]) == [20, 70, 30, 40]
    assert ran == [1, 2, 3, 7, 3, 4]  # 2 moved and kept its result; 7 is new


unkeepable: set[int] = set()


def lock_for(n: int) -> Any:
    ran.append(n)
    return threading.Lock() if n in unkeepable else n * 10


async def alock_for(n: int) -> Any:
    return lock_for(n)


@pytest.mark.parametrize("kind", ["inline", "threads", "async"])
def test_a_result_that_cannot_be_kept_fails_as_its_item(tmp_path: Path, kind: str) -> None:
    """A clear error naming the item; the results of the others are kept."""
    store = durable.open_store(str(tmp_path))

    @durable.workflow(store=store, run_id="r1", name="locks")
    def fan(items: list[int]) -> list[int]:
        if kind == "inline":
            return durable.loop_over(lock_for, items, checkpoint_items=True)
        with cf.ThreadPoolExecutor(1) as pool:
            return durable.loop_over(lock_for, items, executor=pool, checkpoint_items=True)

    @durable.workflow(store=store, run_id="r1", name="locks")
    async def afan(items: list[int]) -> list[int]:
        return await durable.loop_over(alock_for, items, max_concurrency=1, checkpoint_items=True)

    def call(items: list[int]) -> list[int]:
        return asyncio.run(afan(items)) if kind == "async" else fan(items)

    unkeepable.add(2)
    try:
        with pytest.raises(durable.SerializationError) as caught:
            call([1, 2, 3])
    finally:
        unkeepable.clear()
    assert "item 1 (of 3) of loop_over(" in fmt(caught.value)
    before = len(ran)
    assert item_indexes(store, "locks", "r1") >= {0}
    assert call([1, 2, 3]) == [10, 20, 30]
    assert 1 not in ran[before:] and ran[before:].count(2) == 1
