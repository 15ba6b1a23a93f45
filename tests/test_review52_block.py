"""stale58's check of a step's code before its output is recorded, for a
`loop_over` of that step: a notebook cell redefining a helper the step
calls while the run went on in a thread, the block ran the new helper and
was recorded (its items kept) under the fingerprint the run started with:
the run completed with `(2, [102])`, and one suspended after the block,
called again with the cell undone, replayed `(2, [102])` for `(2, [3])`. The block's record and each item kept are now checked as a
step's output is: the run is refused, nothing is recorded or kept."""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

import durable

FLOW = """
import os
import durable
import _review52_sync as sync  # the test's: no state of this module's

def helper(x):
    return x + 1

@durable.step
def s(x):
    with open(os.environ["COUNT52"], "a") as f:
        f.write("s\\n")
    return helper(x)

@durable.workflow(run_id="r1")
def wf(checkpoint):
    a = s(1)
    sync.paused.set()
    sync.go.wait(30)  # the user's next cell runs meanwhile
    return a, durable.loop_over(s, [2], checkpoint_items=checkpoint)
"""


def helper(x: int) -> int:  # the cell's new helper
    return x + 100


@pytest.mark.parametrize("checkpoint", [False, True])
def test_a_block_of_a_step_whose_helper_a_cell_redefined_is_not_recorded_as_the_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpoint: bool
) -> None:
    sync = types.ModuleType("_review52_sync")
    sync.paused, sync.go = threading.Event(), threading.Event()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_review52_sync", sync)
    monkeypatch.setenv("COUNT52", str(tmp_path / "count"))
    (tmp_path / "flow52block.py").write_text(FLOW)
    spec = importlib.util.spec_from_file_location("flow52block", tmp_path / "flow52block.py")
    assert spec is not None and spec.loader is not None
    flow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flow)
    wf = flow.wf.with_options(store=str(tmp_path / "store"))
    said: list[Any] = []

    def background() -> None:
        try:
            said.append(wf(checkpoint))
        except durable.DefinitionChangedError as e:
            said.append(e)

    thread = threading.Thread(target=background)
    thread.start()
    assert sync.paused.wait(30)  # type: ignore[attr-defined]
    old, flow.helper = flow.helper, helper
    sync.go.set()  # type: ignore[attr-defined]
    thread.join(30)
    assert isinstance(said[0], durable.DefinitionChangedError), said  # was (2, [102])
    flow.helper = old  # the cell undone
    assert wf(checkpoint) == (2, [3])  # was (2, [102]): recorded for the cell's helper
    assert (tmp_path / "count").read_text().split() == ["s", "s", "s"]


REGISTRY = """
import os
import durable
import _review52_sync as sync

def fa(x):
    return x + 1

def fb(x):
    return x + 100

HANDLERS = {"a": fa}

@durable.step
def s(x):
    with open(os.environ["COUNT52"], "a") as f:
        f.write("s\\n")
    return HANDLERS["a"](x)

@durable.workflow(run_id="r1")
def wf():
    a = s(1)
    sync.paused.set()
    sync.go.wait(30)  # the user's next cell runs meanwhile
    return a, s(2)
"""


def test_a_registry_entry_a_cell_rebinds_is_code_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cell rebinds a registry's entry (`HANDLERS["a"] = fb`) while the
    run goes on in a thread: the step's fingerprint changed, but the
    witness told it a value change (the functions a dict holds are
    witnessed as a list, which is no function), vouched for it, and the
    call was recorded under the old fingerprint: (2, 102) where the code
    gives (2, 3), replayed once the cell was undone."""
    sync = types.ModuleType("_review52_sync")
    sync.paused, sync.go = threading.Event(), threading.Event()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_review52_sync", sync)
    monkeypatch.setenv("COUNT52", str(tmp_path / "count"))
    (tmp_path / "flow52reg.py").write_text(REGISTRY)
    spec = importlib.util.spec_from_file_location("flow52reg", tmp_path / "flow52reg.py")
    assert spec is not None and spec.loader is not None
    flow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flow)
    wf = flow.wf.with_options(store=str(tmp_path / "store"))
    said: list[Any] = []

    def background() -> None:
        try:
            said.append(wf())
        except durable.DefinitionChangedError as e:
            said.append(e)

    thread = threading.Thread(target=background)
    thread.start()
    assert sync.paused.wait(30)  # type: ignore[attr-defined]
    flow.HANDLERS["a"] = flow.fb
    sync.go.set()  # type: ignore[attr-defined]
    thread.join(30)
    assert isinstance(said[0], durable.DefinitionChangedError), said  # was (2, 102)
    flow.HANDLERS["a"] = flow.fa  # the cell undone
    assert wf() == (2, 3)
    assert (tmp_path / "count").read_text().split() == ["s", "s", "s"]
