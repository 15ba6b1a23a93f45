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
