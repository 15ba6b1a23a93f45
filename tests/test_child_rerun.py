"""A parent under on_change="rerun" executes live every position after the
first changed one: a child run there runs afresh too, as a step there does,
never answered with the value it completed with before the change. A child
at the changed position itself re-runs only what changed in it."""

from __future__ import annotations

from typing import Any

import durable
from durable.testing import memory_store


def make(store: durable.Store, version: str, ran: list[str], shared: dict[str, str]) -> Any:
    @durable.step(name="first", version=version)
    def first(x: int) -> int:
        ran.append("first")
        shared["file"] = version  # what the later positions read
        return x

    @durable.step(name="later")
    def later(x: int) -> str:
        ran.append("later")
        return shared["file"]

    @durable.step(name="inner")
    def inner(x: int) -> str:
        ran.append("inner")
        return shared["file"]

    @durable.workflow(name="child", store=store)
    def child(x: int) -> str:
        return inner(x)

    @durable.workflow(name="parent", store=store, on_change="rerun")
    def parent(x: int) -> list[Any]:
        return [first(x), later(x), child(x)]

    return parent


def test_a_child_after_the_first_changed_position_runs_afresh_under_rerun() -> None:
    store, ran, shared = memory_store(), [], {}
    assert make(store, "1", ran, shared).with_options(run_id="P")(1) == [1, "1", "1"]
    ran.clear()
    assert make(store, "2", ran, shared).with_options(run_id="P")(1) == [1, "2", "2"]
    assert ran == ["first", "later", "inner"]
    ran.clear()
    assert make(store, "2", ran, shared).with_options(run_id="P")(1) == [1, "2", "2"]
    assert ran == []  # the new records replay
