"""A workflow run in the background of a notebook (a thread, or a task on
the kernel's loop) while the user runs the next cell: the cell redefines a
helper a step calls. The run took its steps' fingerprints at its start, so
the step's next call ran the new helper and was recorded under the old
code's fingerprint: with the cell undone, the run called again returned
`(2, 102)`, the second value made by code that no longer exists. A step's
code is now checked again as its output is about to be recorded: changed
since the run started, the run is refused and nothing is recorded for that
call."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import durable
from durable._fingerprint.witness import same

FLOW = """
import os, threading
import durable

paused, go = threading.Event(), threading.Event()

def helper(x):
    return x + 1

@durable.step
def s(x):
    with open(os.environ["COUNT58"], "a") as f:
        f.write("s\\n")
    return helper(x)

@durable.workflow(run_id="r1")
def wf():
    a = s(1)
    paused.set()
    go.wait(30)  # the user's next cell runs meanwhile
    return a, s(2)
"""


def helper(x: int) -> int:  # the cell's new helper
    return x + 100


def test_a_helper_a_cell_redefines_while_the_run_goes_on_is_not_recorded_as_the_old(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("COUNT58", str(tmp_path / "count"))
    (tmp_path / "flow58bg.py").write_text(FLOW)
    spec = importlib.util.spec_from_file_location("flow58bg", tmp_path / "flow58bg.py")
    assert spec is not None and spec.loader is not None
    flow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flow)
    wf = flow.wf.with_options(store=str(tmp_path / "store"))
    said: list[object] = []

    def background() -> None:
        try:
            said.append(wf())
        except durable.DefinitionChangedError as e:
            said.append(e)

    thread = threading.Thread(target=background)
    thread.start()
    assert flow.paused.wait(30)
    old, flow.helper = flow.helper, helper
    flow.go.set()
    thread.join(30)
    assert isinstance(said[0], durable.DefinitionChangedError), said  # was (2, 102)
    assert "helper" in str(said[0]) and "while" in str(said[0]), said
    flow.helper = old  # the cell undone
    assert wf() == (2, 3)  # was (2, 102): recorded for the cell's helper under the old fingerprint
    # s(2) ran the cell's helper once, refused as it ended (nothing recorded), and ran again.
    assert (tmp_path / "count").read_text().split() == ["s", "s", "s"]


class _Box:
    @classmethod
    def put(cls, x: int) -> int:
        return x


def test_a_method_made_anew_at_each_access_is_no_code_changed() -> None:
    """`_Box.put` of a classmethod (or `obj.m`) is a new object at each
    access: the check of a step's code mid-run took it for another function
    and refused a run whose step calls `W.put(LOG, x)` (found merging
    review50 with this rule: test_review50_handed[classmethod])."""
    assert _Box.put is not _Box.put
    assert same(_Box.put, _Box.put)
    other: Any = type("_Other", (_Box,), {})
    assert not same(_Box.put, other.put)  # the same function bound to another class


TABLE = list(range(1000))


def test_the_mid_run_check_is_asked_only_when_other_code_may_run(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Alone in its process (one thread, no IPython, no event loop), only the
    run's own body and steps ran since it started, which a resume runs or
    replays alike: the step is not fingerprinted again, which walks what its
    globals hold (4 ms a call for a 100,000-int list). With another thread
    alive it is, at each live call."""
    from durable._core import spec

    if spec._others_may_run():
        import pytest

        pytest.skip("another thread or IPython in this test process")
    asked: list[int] = []
    real = spec.refingerprint

    def counted(step: Any, *, files: bool = True) -> Any:
        asked.extend([] if files else [1])  # the check's: files are not asked mid-run
        return real(step, files=files)

    monkeypatch.setattr(spec, "refingerprint", counted)

    @durable.step(name="looks_up")
    def looks_up(i: int) -> int:
        return TABLE[i]

    @durable.workflow(store=durable.open_store(tmp_path / "s"), run_id="r")
    def flow(n: int) -> int:
        return sum(looks_up(i) for i in range(n))

    assert flow(3) == 3 and asked == []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert flow.with_options(run_id="r2")(3) == 3
    finally:
        stop.set()
        other.join()
    assert len(asked) == 3
