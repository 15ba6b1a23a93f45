"""A function defined in the workflow body that reads a local of the body
(`ys = sorted(xs)`, then a step summing `ys`) computes from the run's
arguments that local is made from: a resume given another value for one of
them is a changed call, never a replay of the output computed from the old
one. A local made from no argument (a list the steps fill) and an argument
the local is not made from (`ready`) change nothing: those resumes replay."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import run_in
from tests.test_closure_arguments import refused_on_resume


def sorted_total(counts: Counter[str], store: durable.Store) -> Any:
    @durable.workflow(run_id="r1", store=store)
    def totals(xs: list[int], ready: bool = False) -> int:
        ys = sorted(xs)

        @durable.step
        def total() -> int:
            counts["total"] += 1
            return sum(ys)

        out: int = total()
        if not ready:
            durable.suspend("waiting")
        return out

    return totals


def test_another_argument_the_local_is_made_from_is_refused(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    totals = sorted_total(counts, store)
    refused_on_resume(totals, "r1", [2, 1], xs=[1, 2, 3])  # was: 3, running gives 6
    assert counts == {"total": 1}
    assert totals.resume("r1", xs=[2, 1], ready=True).value == 3  # the same list: replayed
    assert counts == {"total": 1}


def test_rerun_computes_it_from_the_new_argument(store: durable.Store) -> None:
    counts: Counter[str] = Counter()
    totals = sorted_total(counts, store).with_options(on_change="rerun")
    with pytest.raises(durable.Suspended):
        totals([1, 2])
    assert totals.resume("r1", xs=[1, 2, 3], ready=True).value == 6
    assert counts == {"total": 2}


def test_a_local_made_from_no_argument_replays(store: durable.Store) -> None:
    runs: list[str] = []

    @durable.workflow(run_id="r2", store=store)
    def filled(names: list[str], ready: bool = False) -> list[str]:
        seen: list[str] = []  # program state the steps fill, made from no argument (a log: not read back)

        @durable.step
        def greet(name: str) -> str:
            runs.append(name)
            seen.append(name)
            return f"hi {name}"

        out = [greet(n) for n in ("a", "b")]
        if not ready:
            durable.suspend("waiting")
        return out

    with pytest.raises(durable.Suspended):
        filled(["x"])
    run = filled.resume("r2", names=["y"], ready=True)  # `names` is read by no local a step reads
    assert run.value == ["hi a", "hi b"] and runs == ["a", "b"]


@pytest.mark.parametrize("recorded", [1, 2])
def test_a_local_a_step_reads_back_is_refused_on_resume(store: durable.Store, recorded: int) -> None:
    """The body made `seen` anew at the resume (in this process too), empty:
    a replayed call does not redo its append. With the first call alone
    recorded, the second, live, would return `after 0` for `after 1`.
    With both recorded every call would replay, but which calls will run
    live is known only as the body goes on, after the first was replayed
    (re-running from there, `on_change='rerun'`, would start at the second,
    still on the empty list): both are refused at the first call, executing
    nothing, and the way out re-runs both."""
    runs: list[str] = []

    @durable.workflow(run_id=f"r3-{recorded}", store=store)
    def filled(ready: bool = False) -> list[str]:
        seen: list[str] = []

        @durable.step
        def greet(name: str) -> str:
            runs.append(name)
            seen.append(name)
            return f"hi {name} after {len(seen) - 1}"

        out = [greet("a")]
        if recorded == 1 and not ready:
            durable.suspend("waiting")
        out.append(greet("b"))
        if not ready:
            durable.suspend("waiting")
        return out

    with pytest.raises(durable.Suspended):
        filled()
    with pytest.raises(durable.DefinitionChangedError) as refused:
        filled.resume(f"r3-{recorded}", ready=True)
    assert "seen, which " in str(refused.value) and "greet writes and reads back at its next call" in str(refused.value)
    assert "made anew by a workflow's body" in str(refused.value)
    before = ["a", "b"][:recorded]
    assert runs == before  # nothing executed at the resume
    run = filled.with_options(on_change="rerun").resume(f"r3-{recorded}", ready=True)
    assert run.value == ["hi a after 0", "hi b after 1"] and runs == [*before, "a", "b"]


@pytest.mark.parametrize(
    "body",
    [
        "ys = []\n    if mode == 'big':\n        ys.append(100)",  # made under a condition
        "ys = []\n    for m in [mode]:\n        ys.extend([len(m)])",  # by a loop over it
        "ys = [0]\n    fill(ys, mode)",  # passed to a call that may fill it
        "ys = {}\n    ys['k'] = len(mode)",  # stored into
        "ys = [len(mode)]\n    zs = ys\n    ys = list(zs)",  # through another local
    ],
)
def test_each_way_a_local_is_made_from_an_argument(tmp_path: Path, body: str) -> None:
    """In real processes: the script suspends after its step with
    mode="small", then is resumed with mode="big"."""
    (tmp_path / "flow.py").write_text(
        f"""
import os, sys
import durable

def fill(target, mode):
    target.append(len(mode))

@durable.workflow(run_id="r1")
def wf(mode, ready=False):
    {body}

    @durable.step
    def total():
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("total\\n")
        return sum(ys) if isinstance(ys, list) else sum(ys.values())

    out = total()
    if not ready:
        durable.suspend("waiting")
    return out

try:
    if sys.argv[1] == "start":
        wf("small")
    else:
        print("value", wf.resume("r1", mode="big", ready=True).value)
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", "arguments changed" in str(e))
"""
    )
    assert run_in(tmp_path, "flow.py", "start").strip() == "suspended"
    assert run_in(tmp_path, "flow.py", "resume").strip() == "refused True"
    assert (tmp_path / "count").read_text() == "total\n"


def test_a_loop_over_function_reading_a_derived_local(store: durable.Store) -> None:
    seen: list[int] = []

    @durable.workflow(run_id="r3", store=store)
    def scaled(weights: dict[str, int], ready: bool = False) -> list[int]:
        w = weights["w"]
        factors = [w, w]

        def scale(x: int) -> int:
            seen.append(x)
            return x * factors[0]

        out = durable.loop_over(scale, [1, 2])
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(scaled, "r3", {"w": 2}, weights={"w": 3})  # was: [2, 4]
    assert scaled.with_options(on_change="rerun").resume(
        "r3", weights={"w": 3}, ready=True
    ).value == [3, 6]
    assert seen == [1, 2, 1, 2]


def test_a_child_workflow_reading_a_derived_local(store: durable.Store) -> None:
    counts: Counter[str] = Counter()

    @durable.workflow(run_id="r4", store=store)
    def parent(xs: list[int], ready: bool = False) -> int:
        doubled = [2 * x for x in xs]

        @durable.workflow
        def child() -> int:
            counts["child"] += 1
            return sum(doubled)

        out: int = child()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(parent, "r4", [1, 2], xs=[1, 2, 3])  # was: 6, running gives 12
    assert counts == {"child": 1}
    assert parent.with_options(on_change="rerun").resume("r4", xs=[1, 2, 3], ready=True).value == 12
    assert counts == {"child": 2}


def test_a_body_without_source_makes_each_local_depend_on_every_argument(
    store: durable.Store,
) -> None:
    """exec'd code (a `version=` says what it is): which argument `ys` is
    made from cannot be read, so a resume changing only `ready` is refused."""
    space: dict[str, Any] = {"durable": durable, "store": store, "runs": []}
    exec(  # a body without source is the case under test
        """
@durable.workflow(run_id="r5", store=store, version="1")
def totals(xs, ready=False):
    ys = list(xs)

    @durable.step(version="1")
    def total():
        runs.append(1)
        return sum(ys)

    out = total()
    if not ready:
        durable.suspend("waiting")
    return out
""",
        space,
    )
    totals = space["totals"]
    with pytest.raises(durable.Suspended):
        totals([1, 2])
    with pytest.raises(durable.DefinitionChangedError, match="arguments changed"):
        totals.resume("r5", ready=True)
    assert space["runs"] == [1]


def make_total(ys: list[int], runs: list[int]) -> Any:
    @durable.step
    def total() -> int:
        runs.append(1)
        return sum(ys)

    return total


@pytest.mark.parametrize("how", ["factory", "decorated in the body"])
def test_a_step_a_factory_makes_in_the_body_from_an_argument(
    store: durable.Store, how: str
) -> None:
    runs: list[int] = []

    def plain(ys: list[int]) -> Any:
        return lambda: runs.append(1) or sum(ys)

    @durable.workflow(run_id="r8", store=store)
    def totals(xs: list[int], ready: bool = False) -> int:
        if how == "factory":
            total = make_total(sorted(xs), runs)
        else:
            total = durable.step(name="total")(plain(sorted(xs)))
        out: int = total()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(totals, "r8", [1, 2], xs=[1, 2, 3])  # was: 3, running gives 6
    assert runs == [1]
    assert totals.resume("r8", xs=[1, 2], ready=True).value == 3  # the same list: replayed
    assert runs == [1]


def make_scale(factors: list[int], seen: list[int]) -> Any:
    def scale(x: int) -> int:
        seen.append(x)
        return x * factors[0]

    return scale


@pytest.mark.parametrize("checkpoint", [False, True])
def test_a_loop_over_function_a_factory_makes_in_the_body(
    store: durable.Store, checkpoint: bool
) -> None:
    seen: list[int] = []

    @durable.workflow(run_id="r9", store=store)
    def scaled(weights: dict[str, int], ready: bool = False) -> list[int]:
        factors = [weights["w"]]
        out = durable.loop_over(make_scale(factors, seen), [1, 2], checkpoint_items=checkpoint)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(scaled, "r9", {"w": 2}, weights={"w": 3})  # was: [2, 4]
    assert scaled.with_options(on_change="rerun").resume(
        "r9", weights={"w": 3}, ready=True
    ).value == [3, 6]
    assert seen == [1, 2, 1, 2]


def make_child(ys: list[int], runs: list[int]) -> Any:
    @durable.workflow(name="made_child")
    def made_child() -> int:
        runs.append(1)
        return sum(ys)

    return made_child


def test_a_child_workflow_a_factory_makes_in_the_body(store: durable.Store) -> None:
    runs: list[int] = []

    @durable.workflow(run_id="r12", store=store)
    def parent(xs: list[int], ready: bool = False) -> int:
        child = make_child(sorted(xs), runs)
        out: int = child()
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(parent, "r12", [1, 2], xs=[1, 2, 3])  # was: 3, running gives 6
    assert runs == [1]
    assert parent.with_options(on_change="rerun").resume("r12", xs=[1, 2, 3], ready=True).value == 6
    assert runs == [1, 1]
