"""`on_change="rerun"` and a `loop_over(checkpoint_items=True)` block that
was cut short: the items it kept are used when what changed comes after the
block, and run again when the change is at the block (its function) or
before it: "rerun" discards every record from the first difference on, the
block's kept items too, as it re-runs later steps whose calls look the same
(what they read may come from the changed step). Executions counted."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import durable


def _flow(store: durable.Store, versions: dict[str, str], ran: Counter[str], fail: set[int]) -> Any:
    @durable.step(name="prep", version=versions["prep"])
    def prep() -> list[int]:
        ran["prep"] += 1
        return [0, 1, 2, 3]

    @durable.step(name="item", version=versions["item"])
    def item(i: int) -> int:
        ran[f"item {i}"] += 1
        if i in fail:
            raise ValueError(f"item {i} failed")
        return i * 10

    @durable.step(name="report", version=versions["report"])
    def report(values: list[int]) -> int:
        ran["report"] += 1
        return sum(values)

    @durable.workflow(store=store, run_id="r", name="flow", on_change="rerun")
    def flow() -> int:
        return report(durable.loop_over(item, prep(), checkpoint_items=True))

    return flow


@pytest.mark.parametrize(
    ("changed", "again"),
    [("report", []), ("item", [0, 1]), ("prep", [0, 1])],
)
def test_rerun_keeps_the_items_of_a_block_before_the_first_change(
    local_store: durable.Store, changed: str, again: list[int]
) -> None:
    versions = {"prep": "1", "item": "1", "report": "1"}
    ran: Counter[str] = Counter()
    with pytest.raises(ValueError, match="item 2 failed"):
        _flow(local_store, versions, ran, fail={2})()  # items 0 and 1 kept, 3 never started
    assert ran == {"prep": 1, "item 0": 1, "item 1": 1, "item 2": 1}
    versions[changed] = "2"
    assert _flow(local_store, versions, ran, fail=set())() == 60
    expected = Counter({"prep": 1, "item 0": 1, "item 1": 1, "item 2": 2, "item 3": 1, "report": 1})
    expected.update(f"item {i}" for i in again)
    if changed == "prep":
        expected["prep"] += 1
    assert ran == expected
