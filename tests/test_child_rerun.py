"""A parent under on_change="rerun" executes live every position after the
first changed one: a child run there runs afresh too, as a step there does,
never answered with the value it completed with before the change; also
when the attempt that discarded it stops before reaching it (a wait asked
again) and a later one reaches it, a child that failed there included. A child at the changed position itself
re-runs only what changed in it."""

from __future__ import annotations

from typing import Any

import pytest

import durable
from durable.testing import memory_store

ran: list[str] = []
shared: dict[str, str] = {}


@durable.step(name="inner")
def inner(x: int) -> str:
    ran.append("inner")
    return shared["file"]  # what the step before it wrote


@durable.workflow(name="child")
def child(x: int) -> str:
    return inner(x)


def first_step(version: str) -> Any:
    """The step before the child, writing what the child reads; its
    version is the edit that makes the rerun."""

    @durable.step(name="first", version=version)
    def first(x: int) -> int:
        ran.append("first")
        shared["file"] = version
        return x

    return first


def make(store: durable.Store, version: str, wait: bool = False) -> Any:
    first = first_step(version)

    @durable.workflow(name="parent", store=store, on_change="rerun")
    def parent(x: int) -> list[Any]:
        a = first(x)
        ok = durable.wait_for("ok") if wait else None
        return [a, ok, child.with_options(store=store)(x)]

    return parent


def test_a_child_after_the_first_changed_position_runs_afresh_under_rerun() -> None:
    store = memory_store()
    ran.clear()
    assert make(store, "1").with_options(run_id="P")(1) == [1, None, "1"]
    ran.clear()
    assert make(store, "2").with_options(run_id="P")(1) == [1, None, "2"]
    assert ran == ["first", "inner"]
    ran.clear()
    assert make(store, "2").with_options(run_id="P")(1) == [1, None, "2"]
    assert ran == []  # the new records replay


def test_a_child_discarded_by_an_attempt_that_stopped_before_it_runs_afresh_later() -> None:
    store = memory_store()
    ran.clear()
    with pytest.raises(durable.Suspended):
        make(store, "1", wait=True).with_options(run_id="P")(1)
    assert make(store, "1", wait=True).resume("P", inputs={"ok": "y"}).value == [1, "y", "1"]
    ran.clear()
    with pytest.raises(durable.Suspended):  # the rerun discards the answer: asked again
        make(store, "2", wait=True).with_options(run_id="P")(1)
    assert make(store, "2", wait=True).resume("P", inputs={"ok": "y"}).value == [1, "y", "2"]
    assert ran == ["first", "inner"]


def failing_parent(store: durable.Store, wait: bool = False) -> Any:
    """A parent whose child run fails at its second step while `shared["fail"]`."""

    @durable.step(name="last")
    def last(x: int) -> int:
        ran.append("last")
        if shared.get("fail"):
            raise RuntimeError("last fails")
        return x

    @durable.workflow(name="failing", store=store)
    def failing(x: int) -> list[Any]:
        return [inner(x), last(x)]

    def parent_of(version: str) -> Any:
        first = first_step(version)

        @durable.workflow(name="parent", store=store, on_change="rerun")
        def parent(x: int) -> list[Any]:
            a = first(x)
            ok = [durable.wait_for("ok")] if wait else []
            return [a, *ok, failing(x)]

        return parent

    return parent_of


def test_a_child_that_failed_after_the_first_changed_position_runs_afresh_under_rerun() -> None:
    store = memory_store()
    ran.clear()
    shared["fail"] = "yes"
    parent_of = failing_parent(store)
    with pytest.raises(RuntimeError):
        parent_of("1").with_options(run_id="P")(1)
    assert ran == ["first", "inner", "last"]
    ran.clear()
    del shared["fail"]
    assert parent_of("2").with_options(run_id="P")(1) == [1, ["2", 1]]
    assert ran == ["first", "inner", "last"]  # inner ran before the change: again


def test_a_failed_child_discarded_by_an_attempt_that_stopped_before_it_runs_afresh_later() -> None:
    """The attempt that discarded the failed child stopped at the wait asked
    again; the next one resumed the child, replaying what `inner` returned
    before the change."""
    store = memory_store()
    ran.clear()
    shared["fail"] = "yes"
    parent_of = failing_parent(store, wait=True)
    with pytest.raises(durable.Suspended):
        parent_of("1").with_options(run_id="P")(1)
    with pytest.raises(RuntimeError):
        parent_of("1").resume("P", inputs={"ok": "y"})
    ran.clear()
    del shared["fail"]
    with pytest.raises(durable.Suspended):  # the rerun discards the answer: asked again
        parent_of("2").with_options(run_id="P")(1)
    assert parent_of("2").resume("P", inputs={"ok": "y"}).value == [1, "y", ["2", 1]]
    assert ran == ["first", "inner", "last"]
