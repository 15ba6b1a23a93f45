"""A step's output that holds parts of its call's arguments (LangGraph's
`return {**state, "rev": 1}`, a step returning `state["items"]`) holds
them again after a resume, as it did live: the record notes which parts
of the output were parts of the arguments (output path -> argument
path), and a replay hands back the current call's part at that path when
it is equal (by the identity digest) to what was recorded. Before, the
replayed output held copies: a later step given both (`reflect(a, b)`)
was refused on every resume, and a body changing one part did not see
the other change. Executions are counted by the step bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import run_each

FLOW = """
import os, durable
COUNTS = os.environ["COUNT_FILE"]
def count(name):
    with open(COUNTS, "a") as f:
        f.write(name + "\\n")
@durable.step
def load() -> dict:
    count("load")
    return {"items": [1, 2], "name": "n"}
@durable.step
def revise(a: dict) -> dict:
    count("revise")
    return {**a, "rev": 1}
@durable.step
def reflect(a: dict, b: dict) -> int:
    count("reflect")
    return len(a["items"]) + b["rev"]
@durable.step
def last(r: int) -> int:
    count("last")
    if os.environ.get("BOOM"):
        raise RuntimeError("boom")
    return r
@durable.workflow(run_id="r")
def wf() -> int:
    a = load()
    b = revise(a)
    r = reflect(a, b)
    print("shared", b["items"] is a["items"])
    return last(r)
try:
    print("value", wf())
except Exception as e:
    print(type(e).__name__)
"""


def _flow(store: Any, counts: dict[str, int], seen: list[bool]) -> durable.Workflow[[], int]:
    @durable.step
    def load() -> dict[str, Any]:
        counts["load"] += 1
        return {"items": [1, 2], "name": "n"}

    @durable.step
    def revise(a: dict[str, Any]) -> dict[str, Any]:
        counts["revise"] += 1
        return {**a, "rev": 1}

    @durable.step
    def reflect(a: dict[str, Any], b: dict[str, Any]) -> int:
        counts["reflect"] += 1
        return len(a["items"]) + b["rev"]

    @durable.step
    def last(r: int) -> int:
        counts["last"] += 1
        if counts["last"] == 1:
            raise RuntimeError("boom")
        return r

    @durable.workflow(store=store, run_id="r")
    def wf() -> int:
        a = load()
        b = revise(a)
        r = reflect(a, b)
        seen.append(b["items"] is a["items"])
        return last(r)

    return wf


def test_a_state_revised_by_a_step_resumes_with_its_parts_shared(tmp_path: Path) -> None:
    counts = dict.fromkeys(("load", "revise", "reflect", "last"), 0)
    seen: list[bool] = []
    wf = _flow(durable.open_store(str(tmp_path)), counts, seen)
    with pytest.raises(RuntimeError, match="boom"):
        wf()
    assert wf() == 3  # was: DefinitionChangedError, "was one object when the record was made"
    assert counts == {"load": 1, "revise": 1, "reflect": 1, "last": 2}
    assert seen == [True, True]  # b["items"] is a["items"], live and resumed


@pytest.mark.slow
def test_a_state_revised_by_a_step_resumes_in_a_new_process(tmp_path: Path) -> None:
    """The reproduction, each attempt a process of its own."""
    (tmp_path / "flow.py").write_text(FLOW)
    first, second = run_each([(tmp_path, "import flow", {"BOOM": "1"}), (tmp_path, "import flow", {})])
    assert first.split() == ["shared", "True", "RuntimeError"]
    assert second.split() == ["shared", "True", "value", "3"]
    assert (tmp_path / "count").read_text().split() == ["load", "revise", "reflect", "last", "last"]


def test_a_part_returned_then_changed_by_the_body_behaves_as_live(tmp_path: Path) -> None:
    """`items = first(state)` is `state["items"]` after a resume too: the
    body's append is seen through `state`, so `total(state)` is the same
    call and replays."""
    counts = {"first": 0, "total": 0, "last": 0}
    seen: list[bool] = []

    @durable.step
    def load() -> dict[str, Any]:
        return {"items": [1, 2], "tags": {"k": [0]}}

    @durable.step
    def first(state: dict[str, Any], *, n: int = 0) -> tuple[list[int], list[int]]:
        counts["first"] += 1
        return state["items"], state["tags"]["k"]

    @durable.step
    def total(state: dict[str, Any]) -> int:
        counts["total"] += 1
        return sum(state["items"]) + len(state["tags"]["k"])

    @durable.step
    def last(r: int) -> int:
        counts["last"] += 1
        if counts["last"] == 1:
            raise RuntimeError("boom")
        return r

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def wf() -> int:
        state = load()
        items, k = first(state, n=1)
        items.append(3)
        k.append(1)
        seen.append(items is state["items"] and k is state["tags"]["k"])
        return last(total(state))

    with pytest.raises(RuntimeError, match="boom"):
        wf()
    assert wf() == 8
    assert counts == {"first": 1, "total": 1, "last": 2}
    assert seen == [True, True]


def test_a_step_that_changed_its_argument_keeps_the_value_it_returned(tmp_path: Path) -> None:
    """A step that appended to its argument and returned it recorded the
    changed list; resumed (rebased past the change in place), its replay
    gives that list back, never the argument as it is now (unchanged,
    replayed from `load`): a stale value."""
    counts = {"grow": 0, "last": 0}
    got: list[tuple[list[int], list[int], bool]] = []

    @durable.step
    def load() -> dict[str, list[int]]:
        return {"items": [1, 2]}

    @durable.step
    def grow(state: dict[str, list[int]]) -> list[int]:
        counts["grow"] += 1
        state["items"].append(3)
        return state["items"]

    @durable.step
    def last(r: int) -> int:
        counts["last"] += 1
        if counts["last"] == 1:
            raise RuntimeError("boom")
        return r

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def wf() -> int:
        state = load()
        items = grow(state)
        got.append((items, state["items"], items is state["items"]))
        return last(len(items))

    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="boom"):
        wf()
    assert wf.with_options(rebase=True)() == 3
    assert counts == {"grow": 1, "last": 2}
    assert got == [([1, 2, 3], [1, 2, 3], True), ([1, 2, 3], [1, 2], False)]


def test_an_equal_part_given_by_another_path_is_handed_back_only_when_equal(tmp_path: Path) -> None:
    """What the record notes is checked against the call now: a part that
    is no longer there (an argument of another shape) leaves the decoded
    part, and nothing is noted for an output without parts of containers."""
    from durable._core.sharing import rejoined, shared

    items = [1, 2]
    state = {"items": items, "n": 1}
    out = {"all": items, "t": (items, 5), "n": 1}
    notes = shared(out, [state, items], ((state,), {}))
    assert notes == [[["all"], [0, "items"]], [["t", 0], [0, "items"]]]
    back = rejoined({"all": [1, 2], "t": ([1, 2], 5), "n": 1}, notes, ((state,), {}))
    assert back["all"] is items and back["t"][0] is items and back["t"][1] == 5
    stale = rejoined({"all": [1, 2, 3], "t": ([1, 2, 3], 5), "n": 1}, notes, ((state,), {}))
    assert stale == {"all": [1, 2, 3], "t": ([1, 2, 3], 5), "n": 1} and stale["all"] is not items
    gone = rejoined({"all": [1, 2], "t": ([1, 2], 5), "n": 1}, notes, (([1],), {}))
    assert gone["all"] is not items
    assert shared(list(range(5)), [[0]], (([0],), {})) is None
    assert shared(state, [state], ((state,), {})) == [[[], [0]]]  # `return state`
    assert shared([*range(20), items], [items], ((), {"rows": items}), plain=True) == [[[20], ["rows"]]]
    assert rejoined([1, 2], [[[], ["rows"]]], ((), {"rows": items})) is items


@pytest.mark.parametrize("checkpoint", [False, True])
def test_loop_over_outputs_hold_their_items_parts_after_a_resume(tmp_path: Path, checkpoint: bool) -> None:
    """A block's outputs that are parts of its items are the items' parts
    again, replayed (the block's record) or restored (an item's, under
    checkpoint_items: item 1 failed the first time, item 0 was kept)."""
    counts = {"rows": 0, "total": 0, "last": 0}
    seen: list[bool] = []

    def rows_of(item: dict[str, list[int]]) -> list[int]:
        counts["rows"] += 1
        if checkpoint and counts["rows"] == 2:
            raise RuntimeError("item down")
        return item["rows"]

    @durable.step
    def load() -> list[dict[str, list[int]]]:
        return [{"rows": [1]}, {"rows": [2, 3]}]

    @durable.step
    def total(items: list[dict[str, list[int]]], rows: list[list[int]]) -> int:
        counts["total"] += 1
        return len(items) + sum(map(len, rows))

    @durable.step
    def last(n: int) -> int:
        counts["last"] += 1
        if counts["last"] == 1:
            raise RuntimeError("boom")
        return n

    @durable.workflow(store=durable.open_store(str(tmp_path)), run_id="r")
    def wf() -> int:
        items = load()
        rows = durable.loop_over(rows_of, items, checkpoint_items=checkpoint)
        seen.append(all(r is i["rows"] for r, i in zip(rows, items, strict=True)))
        return last(total(items, rows))

    with pytest.raises(RuntimeError, match="item down" if checkpoint else "boom"):
        wf()
    if checkpoint:  # item 0 restored, item 1 run: the block completes, then `last` fails once
        with pytest.raises(RuntimeError, match="boom"):
            wf()
    assert wf() == 5
    assert counts == {"rows": 3 if checkpoint else 2, "total": 1, "last": 2}
    assert seen == [True, True]


def test_a_cache_hit_holds_the_parts_of_its_arguments(tmp_path: Path) -> None:
    """A cached step's entry notes the parts of its arguments it returned:
    a hit, in another run or in a plain call, hands back the caller's own."""
    store = durable.open_store(str(tmp_path))
    counts = {"revise": 0}
    seen: list[bool] = []

    @durable.step(cache=True)
    def revise(a: dict[str, Any]) -> dict[str, Any]:
        counts["revise"] += 1
        return {**a, "rev": 1}

    @durable.step
    def load() -> dict[str, Any]:
        return {"items": [1, 2]}

    @durable.step
    def inside(a: dict[str, Any]) -> bool:
        return revise(a)["items"] is a["items"]  # called plainly in a step's body: the entry alone

    @durable.workflow(store=store)
    def wf(n: int) -> bool:
        a = load()
        b = revise(a)
        seen.append(b["items"] is a["items"])
        return inside(a)

    assert wf(1) and wf(2)  # two runs: the second is served by the first's entry, twice
    assert counts == {"revise": 1}
    assert seen == [True, True]
