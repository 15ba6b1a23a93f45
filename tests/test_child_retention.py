"""`keep_last=` and `gc` never remove a child run while the run that called
it is in the store: the parent checks the files its child made through the
child's manifest, and runs a child that is gone again (its steps would
execute twice). A child goes once its parent has."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable

made: list[int] = []


def flows(root: Path) -> tuple[durable.Workflow[..., str], durable.Workflow[..., list[str]]]:
    store = durable.open_store(root / "store")

    @durable.step(name="make")
    def make(i: int) -> str:
        made.append(i)
        path = root / f"{i}.txt"
        path.write_text(str(i))
        durable.artifact(str(path))
        return path.name

    @durable.workflow(name="child", store=store, keep_last=1)
    def child(i: int) -> str:
        return make(i)

    @durable.workflow(name="parent", store=store)
    def parent(ask: bool) -> list[str]:
        names = [child(1), child(2)]
        if ask:
            durable.suspend("waiting for a look at the files")
        return names

    return child, parent


def test_keep_last_of_a_child_workflow_keeps_the_children_of_a_parent_in_the_store(
    tmp_path: Path,
) -> None:
    child, parent = flows(tmp_path)
    made.clear()
    with pytest.raises(durable.Suspended):
        parent.with_options(run_id="P")(True)
    assert made == [1, 2]
    assert parent.resume("P", ask=False).value == ["1.txt", "2.txt"]
    assert parent.with_options(run_id="P")(False) == ["1.txt", "2.txt"]
    assert made == [1, 2]  # each file made once
    assert sorted(i.run_id for i in child.runs()) == ["P.0", "P.1"]
    store = durable.open_store(tmp_path / "store")
    assert durable.gc(store, keep_last=1, workflow="child") == []  # both still their parent's
    parent.delete("P")
    assert [i.run_id for i in durable.gc(store, keep_last=1, workflow="child")] == [
        "P.0"
    ]  # its parent gone, the older child goes


def test_recover_of_a_child_workflow_leaves_a_child_to_its_parent(tmp_path: Path) -> None:
    """A restarted parent runs the child runs of the discarded run afresh
    when it reaches them: `recover()` of the child workflow resuming one on
    its own before that ran its steps once more for nothing (and a child
    resumed outside its parent answers none of its waits, hears none of its
    cancels). It is reported and left to its parent's resume."""
    store = durable.open_store(tmp_path / "store")
    sent: list[str] = []
    gate = {"child": "fails", "parent": ""}

    @durable.step(name="send")
    def send(what: str) -> str:
        sent.append(what)
        if gate["child"] == what:
            raise RuntimeError("the mail server is down")
        return what

    @durable.workflow(name="mails", store=store)
    def mails() -> list[str]:
        return [send("first"), send("fails")]

    @durable.step(name="check")
    def check() -> str:
        if gate["parent"]:
            raise RuntimeError("not yet")
        return "ok"

    @durable.workflow(name="campaign", store=store, run_id="C")
    def campaign() -> list[object]:
        return [check(), mails()]

    with pytest.raises(RuntimeError, match="mail server"):
        campaign()
    gate.update(child="", parent="yes")
    with pytest.raises(RuntimeError, match="not yet"):
        campaign.with_options(restart=True)()  # stops before its child
    assert sent == ["first", "fails"]
    (skipped,) = mails.recover()
    assert skipped.run_id == "C.1" and "campaign" in (skipped.error or "")
    assert sent == ["first", "fails"]  # nothing of the discarded run's child ran
    gate["parent"] = ""
    assert campaign() == ["ok", ["first", "fails"]]
    assert sent == ["first", "fails", "first", "fails"]  # the child afresh, once


def test_a_fork_past_a_child_checks_its_files_without_the_source_run(tmp_path: Path) -> None:
    """A fork's record of a child names the source's child run; once the
    source and that child are removed (`rm`, then `gc`), the fork still
    checks the files the child made, kept in the record itself, instead of
    running the child again for want of its manifest."""
    _, parent = flows(tmp_path)
    made.clear()
    with pytest.raises(durable.Suspended):
        parent.with_options(run_id="P")(True)
    with pytest.raises(durable.Suspended):  # both children before the fork point
        parent.fork("P", at=2, new_run_id="F")
    parent.delete("P")
    store = durable.open_store(tmp_path / "store")
    assert sorted(i.run_id for i in durable.gc(store, keep_last=0, workflow="child")) == [
        "P.0", "P.1"
    ]
    assert parent.resume("F", ask=False).value == ["1.txt", "2.txt"]
    assert made == [1, 2]  # the files are as the children left them: nothing made again
    (tmp_path / "1.txt").write_text("changed")
    assert parent.with_options(run_id="F")(False) == ["1.txt", "2.txt"]
    assert made == [1, 2, 1, 2]  # a changed file still makes its child run, and what follows
