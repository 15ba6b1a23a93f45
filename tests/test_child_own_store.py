"""A child workflow kept in a store of its own (`store=` on the child) is
its parent's as much as one in the parent's store: `gc` keeps it and
`recover` leaves it while its parent run is in the parent's store (its
steps would execute twice: once on their own, once when the parent runs
the child again); once the parent is gone, it goes. A rerun of the parent
that discards it removes it from its store."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import durable
from durable.testing import memory_store
from tests.test_child_rerun import child, first_step, ran

sent: list[str] = []


def flows(root: Path, gate: dict[str, str]) -> tuple[durable.Workflow[..., list[str]], ...]:
    """A parent in store `p` whose child run (in store `c`) fails at its second step."""

    @durable.step(name="send")
    def send(what: str) -> str:
        sent.append(what)
        if gate["child"] == what:
            raise RuntimeError("the mail server is down")
        return what

    @durable.workflow(name="mails", store=durable.open_store(root / "c"))
    def mails() -> list[str]:
        return [send("first"), send("fails")]

    @durable.step(name="check")
    def check() -> str:
        if gate["parent"]:
            raise RuntimeError("not yet")
        return "ok"

    @durable.workflow(name="campaign", store=durable.open_store(root / "p"), run_id="C")
    def campaign() -> list[object]:
        return [check(), mails()]

    return mails, campaign


def test_recover_of_a_child_in_its_own_store_leaves_it_to_its_parent(tmp_path: Path) -> None:
    gate = {"child": "fails", "parent": ""}
    mails, campaign = flows(tmp_path, gate)
    sent.clear()
    with pytest.raises(RuntimeError, match="mail server"):
        campaign()
    gate.update(child="", parent="yes")
    with pytest.raises(RuntimeError, match="not yet"):
        campaign.with_options(restart=True)()  # stops before its child
    (skipped,) = mails.recover()
    assert skipped.run_id == "C.1" and "campaign" in (skipped.error or "")
    assert sent == ["first", "fails"]  # nothing of the discarded run's child ran
    gate["parent"] = ""
    assert campaign() == ["ok", ["first", "fails"]]
    assert sent == ["first", "fails", "first", "fails"]  # the child afresh, once


def test_gc_keeps_a_failed_child_in_its_own_store_while_its_parent_is_there(
    tmp_path: Path,
) -> None:
    gate = {"child": "fails", "parent": ""}
    _, campaign = flows(tmp_path, gate)
    sent.clear()
    with pytest.raises(RuntimeError, match="mail server"):
        campaign()
    child_store = durable.open_store(tmp_path / "c")
    assert durable.gc(child_store, status="failed") == []  # its parent's to resume
    gate["child"] = ""
    assert campaign() == ["ok", ["first", "fails"]]
    assert sent == ["first", "fails", "fails"]  # "first" replayed, never sent twice
    campaign.delete("C")
    assert [i.run_id for i in durable.gc(child_store, keep_last=0)] == ["C.1"]  # its parent gone


def test_a_child_in_its_own_store_discarded_by_a_rerun_that_stopped_runs_afresh_later() -> None:
    """A rerun removes the child runs it discards, in the child's store too:
    the attempt that discarded it stopped at a wait asked again, and the
    next one, reaching the child, returned the value from before the change.
    The child's store is the one opened with its options (a signing key)."""
    store, own = memory_store(), memory_store(signing_key="the child's own")

    def make(version: str) -> Any:
        first = first_step(version)

        @durable.workflow(name="parent", store=store, on_change="rerun")
        def parent(x: int) -> list[Any]:
            a = first(x)
            return [a, durable.wait_for("ok"), child.with_options(store=own)(x)]

        return parent

    ran.clear()
    with pytest.raises(durable.Suspended):
        make("1").with_options(run_id="P")(1)
    assert make("1").resume("P", inputs={"ok": "y"}).value == [1, "y", "1"]
    ran.clear()
    with pytest.raises(durable.Suspended):  # the rerun discards the answer: asked again
        make("2").with_options(run_id="P")(1)
    assert make("2").resume("P", inputs={"ok": "y"}).value == [1, "y", "2"]
    assert ran == ["first", "inner"]


def test_a_child_in_a_shared_store_is_not_taken_by_a_parent_of_another_store(
    tmp_path: Path,
) -> None:
    """Two parent stores (one each) whose runs share an id (derived from the
    same arguments) call one child workflow kept in a shared store: both
    derive its id `<run id>.<position>`. The second parent restarted the
    first one's failed child, and the first's resume restarted it again:
    the step it had finished ran twice. The second call is refused."""
    gate = {"child": "fails", "parent": ""}
    _, campaign = flows(tmp_path, gate)
    sent.clear()
    with pytest.raises(RuntimeError, match="mail server"):
        campaign()
    gate["child"] = ""
    other = campaign.with_options(store=durable.open_store(tmp_path / "other"))
    made = "run 'C' of 'campaign' made it (the one in store"
    with pytest.raises(durable.ConfigurationError, match=re.escape(made)):
        other()
    assert campaign() == ["ok", ["first", "fails"]]
    assert sent == ["first", "fails", "fails"]  # "first" sent once
