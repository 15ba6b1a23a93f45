"""A suspension in a child run (a workflow called from a workflow) names
the run its caller started, the one to resume, and the child that waits."""

from __future__ import annotations

import pytest

import durable


def test_a_suspend_two_runs_down_names_the_outermost_run(store: durable.Store) -> None:
    asked: list[str] = []

    @durable.workflow(name="leaf", store=store)
    def leaf(ok: bool) -> str:
        asked.append("leaf")
        if not ok:
            durable.suspend("needs a review")
        return "reviewed"

    @durable.workflow(name="mid", store=store)
    def mid(ok: bool) -> str:
        return leaf(ok)

    @durable.workflow(name="top", store=store, run_id="t")
    def top(ok: bool = False) -> str:
        return mid(ok)

    with pytest.raises(durable.Suspended) as waiting:
        top()
    found = waiting.value
    assert (found.run_id, found.child, found.waiting_for) == ("t", "t.0.0", None)
    assert "top.resume('t', NAME=VALUE, ...)" in str(found), found
    assert top.resume(found.run_id, ok=True).value == "reviewed"
    assert asked == ["leaf", "leaf"]
