"""A step that reads a workflow argument through its closure (defined in
the body, or made there by a factory) computes from that argument as if
it were given it: a resume with another value for it is a changed call,
not a replay of the output computed from the old one."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import run_in


def suspending(counts: Counter[str], **options: Any) -> Any:
    @durable.workflow(run_id="r1", **options)
    def totals(xs: list[int], ready: bool = False) -> tuple[int, int]:
        @durable.step
        def total() -> int:  # reads `xs` through its closure
            counts["total"] += 1
            return sum(xs)

        @durable.step
        def count(n: int) -> int:  # given what it reads: replayed while `n` holds
            counts["count"] += 1
            return n

        result = (total(), count(2))
        if not ready:
            durable.suspend("waiting for ready")
        return result

    return totals


def test_a_resume_with_another_captured_argument_is_refused(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = suspending(counts, store=store)
    with pytest.raises(durable.Suspended):
        wf([1, 2])
    with pytest.raises(durable.DefinitionChangedError, match="position 0"):
        wf.resume("r1", xs=[1, 2, 3], ready=True)  # was: (3, 2), the sum of [1, 2]
    assert counts == {"total": 1, "count": 1}
    # The same list (another object, equal content) is the same call: replayed.
    assert wf.resume("r1", xs=[1, 2], ready=True).value == (3, 2)
    assert counts == {"total": 1, "count": 1}


def test_rerun_runs_it_again_and_rebase_keeps_it(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    wf = suspending(counts, store=store)
    with pytest.raises(durable.Suspended):
        wf([1, 2])
    with pytest.raises(durable.Suspended):
        wf.with_options(on_change="rerun").resume("r1", xs=[1, 2, 3])
    assert counts == {"total": 2, "count": 2}  # rerun discards from the first change on
    run = wf.with_options(rebase=True).resume("r1", xs=[5], ready=True)
    assert run.value == (6, 2) and counts == {"total": 2, "count": 2}  # vouched for


def test_a_factory_made_step_holding_the_argument_counts_it_too(store: durable.Store) -> None:
    counts: Counter[str] = Counter()

    def make(weights: dict[str, int]) -> Any:
        @durable.step
        def score(x: int) -> int:
            counts["score"] += 1
            return x * weights["w"]

        return score

    @durable.workflow(run_id="r2", store=store)
    def scored(weights: dict[str, int], ready: bool = False) -> int:
        out: int = make(weights)(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(scored, "r2", {"w": 2}, weights={"w": 3})  # was: 20
    assert counts == {"score": 1}
    assert scored.resume("r2", weights={"w": 2}, ready=True).value == 20
    assert counts == {"score": 1}


SCRIPT = """
import json, os, sys
import durable

@durable.workflow(run_id="r1")
def totals(xs, ready=False):
    @durable.step
    def total():
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("total\\n")
        return sum(xs)
    t = total()
    if not ready:
        durable.suspend("waiting")
    return t

if sys.argv[1] == "start":
    try:
        totals(json.loads(sys.argv[2]))
    except durable.Suspended:
        print("suspended")
else:
    run = totals.with_options(on_change=sys.argv[3]).resume("r1", xs=json.loads(sys.argv[2]), ready=True)
    print("value", run.value)
"""


@pytest.mark.slow
def test_resumed_in_another_process(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(SCRIPT)
    assert "suspended" in run_in(tmp_path, "flow.py", "start", "[1, 2]")
    out = run_in(tmp_path, "flow.py", "resume", "[1, 2, 3]", "refuse")
    assert "DefinitionChangedError" in out and "value 3" not in out  # was: value 3
    assert "value 6" in run_in(tmp_path, "flow.py", "resume", "[1, 2, 3]", "rerun")
    assert (tmp_path / "count").read_text().split() == ["total", "total"]


def test_a_step_reading_it_through_a_helper_and_another_step(store: durable.Store) -> None:
    @durable.workflow(run_id="r7", store=store)
    def totals(xs: list[int], ready: bool = False) -> int:
        @durable.step
        def inner() -> int:
            return sum(xs)

        def helper() -> int:
            return inner() * 10  # a plain call inside `outer`

        @durable.step
        def outer() -> int:
            return helper() + 1

        out = outer()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(totals, "r7", [1, 2], xs=[1, 2, 3])  # was: 31, where running gives 61
    assert totals.with_options(on_change="rerun").resume("r7", xs=[1, 2, 3], ready=True).value == 61


@pytest.mark.parametrize("checkpoint", [False, True])
def test_a_loop_over_function_holding_the_argument_counts_it_too(
    store: durable.Store, checkpoint: bool
) -> None:
    seen: list[int] = []

    @durable.workflow(run_id="r3", store=store)
    def scaled(weights: dict[str, int], ready: bool = False) -> list[int]:
        def scale(x: int) -> int:
            seen.append(x)
            return x * weights["w"]

        out = durable.loop_over(scale, [1, 2], checkpoint_items=checkpoint)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(scaled, "r3", {"w": 2}, weights={"w": 3})  # was: [2, 4]
    assert scaled.with_options(on_change="rerun").resume("r3", weights={"w": 3}, ready=True).value == [3, 6]
    assert seen == [1, 2, 1, 2]


@pytest.mark.parametrize("on_change", ["refuse", "rerun"])
def test_a_child_workflow_defined_in_the_body_counts_it_too(
    store: durable.Store, on_change: str
) -> None:
    counts: Counter[str] = Counter()

    @durable.workflow(run_id="r5", store=store)
    def parent(xs: list[int], ready: bool = False) -> tuple[int, int]:
        @durable.step
        def doubled() -> int:  # in the child's body, reads the parent's `xs`
            counts["doubled"] += 1
            return 2 * sum(xs)

        @durable.workflow
        def child() -> tuple[int, int]:
            counts["child"] += 1
            return sum(xs), doubled()

        out = child()
        if not ready:
            durable.suspend("waiting")
        return out

    with pytest.raises(durable.Suspended):
        parent([1, 2])
    again = parent.with_options(on_change=on_change)
    if on_change == "refuse":
        with pytest.raises(durable.DefinitionChangedError):
            again.resume("r5", xs=[1, 2, 3], ready=True)  # was: (3, 6)
        assert counts == {"child": 1, "doubled": 1}
    else:
        assert again.resume("r5", xs=[1, 2, 3], ready=True).value == (6, 12)
        assert counts == {"child": 2, "doubled": 2}


CONFIG: dict[str, list[int]] = {}


@durable.step
def config_total() -> int:
    return sum(CONFIG["xs"])


def test_a_global_the_body_fills_from_the_argument(store: durable.Store) -> None:
    @durable.workflow(run_id="r4", store=store)
    def totals(xs: list[int], ready: bool = False) -> int:
        CONFIG["xs"] = xs
        out: int = config_total()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(totals, "r4", [1, 2], xs=[1, 2, 3])  # replays 3 where running gives 6


def test_a_value_the_body_derives_from_the_argument(store: durable.Store) -> None:
    @durable.workflow(run_id="r6", store=store)
    def totals(xs: list[int], ready: bool = False) -> int:
        ys = sorted(xs)

        @durable.step
        def total() -> int:
            return sum(ys)

        out: int = total()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(totals, "r6", [1, 2], xs=[1, 2, 3])  # replays 3 where running gives 6


def refused_on_resume(
    flow: Any, run_id: str, first: Any, match: str | None = None, **then: Any
) -> None:
    """`flow(first)` suspends after its step; resumed with the arguments
    `then` (and ready), the step is a changed call, never a replay (the
    refusal says `match`)."""
    with pytest.raises(durable.Suspended):
        flow(first)
    with pytest.raises(durable.DefinitionChangedError, match=match):
        flow.resume(run_id, **then, ready=True)
