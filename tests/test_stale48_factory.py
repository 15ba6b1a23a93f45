"""A factory that fills what its step holds after decorating it (`items =
[]`, `@durable.step def s(x): return sum(items) + x`, `items.extend(...)`),
with no module-level statement showing what it was made with: its contents
count, but they were read once per object when the step was decorated (the
list still empty), so a run resumed under another `N` (`mk(N)` in the
workflow's body) replayed `mk(1)`'s output, in one process and in another. They are read when a run first fingerprints the step now; what the
program does to them later counts no more than before (a flag a test flips
between two calls: tests/test_peer_ports.py's DBOS ports)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.scripts import RUN_FLOW, SUSPENDING_WF, refused_after_edit, twice


def test_a_list_filled_after_decorating_counts_as_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []

    def mk(n: int) -> Any:
        items: list[int] = []

        @durable.step
        def s(x: int) -> int:
            ran.append(x)
            return sum(items) + x

        items.extend(range(n))
        return s

    @durable.workflow(store=f"memory://stale48-{uuid.uuid4().hex}", run_id="r")
    def wf(x: int) -> int:
        out: int = mk(int(os.environ["N"]))(x)
        if os.environ.get("STOP"):
            durable.suspend("waiting")
        return out

    monkeypatch.setenv("N", "1")
    monkeypatch.setenv("STOP", "1")
    with pytest.raises(durable.Suspended):
        wf(10)
    monkeypatch.setenv("N", "3")
    monkeypatch.delenv("STOP")
    with pytest.raises(durable.DefinitionChangedError):
        wf(10)  # was 10: mk(1)'s output for mk(3)
    monkeypatch.setenv("N", "1")
    assert wf(10) == 10
    assert ran == [10]


FLOW = (
    """
import os, durable

def mk(n):
    items = []

    @durable.step
    def s(x):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("s\\n")
        return sum(items) + x

    items.extend(range(n))
    return s
"""
    + SUSPENDING_WF.replace("out = s(x)", 'out = mk(int(os.environ["N"]))(x)')
)


@pytest.mark.slow
def test_a_list_filled_after_decorating_is_read_again_at_resume(tmp_path: Path) -> None:
    folders = {name: tmp_path / name for name in ("edited", "same")}
    for folder in folders.values():
        folder.mkdir()
        (folder / "flow.py").write_text(FLOW)
    runs = twice(folders, RUN_FLOW, lambda name, _: {"N": "3" if name == "edited" else "1"}, {"STOP": "1", "N": "1"})
    refused_after_edit(runs["edited"])  # was `value 10`: mk(1)'s output for mk(3)
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value 10" in second and after == ["s"], second
