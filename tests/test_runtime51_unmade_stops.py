"""A run suspended at its first `wait_for`, or one whose child run was
cancelled, kept the definition of the code that stopped it although it
recorded nothing that code made: a resume after an edit was refused as
changed code (runtime50's `made_nothing` covered a failed run alone). It
now runs the edited code; a run that recorded a step is still refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import durable

Make = Callable[..., durable.Workflow[..., int]]


def _waiting(tmp_path: Path) -> tuple[Make, list[str]]:
    """`make(v, first)`: run r1 of `wf`, waiting for `x` (after step
    `before` when `first`), then step `a` of version v; each body counted."""
    store, ran = durable.open_store(str(tmp_path / "store")), []

    def make(v: int, first: bool = False) -> durable.Workflow[..., int]:
        @durable.step(name="before", version="1")
        def before() -> int:
            ran.append("before")
            return 0

        @durable.step(name="a", version=str(v))
        def a(x: int) -> int:
            ran.append(f"a{v}")
            return x + v

        @durable.workflow(name="wf", store=store, run_id="r1")
        def wf() -> int:
            b = before() if first else 0
            return b + a(durable.wait_for("x"))

        return wf

    return make, ran


def test_a_run_suspended_before_recording_anything_runs_the_edited_code(tmp_path: Path) -> None:
    make, ran = _waiting(tmp_path)
    with pytest.raises(durable.Suspended):
        make(1)()
    assert make(2).resume("r1", inputs={"x": 10}).value == 12
    assert ran == ["a2"]


def test_a_run_suspended_after_a_step_is_still_refused(tmp_path: Path) -> None:
    make, ran = _waiting(tmp_path)
    with pytest.raises(durable.Suspended):
        make(1, True)()
    with pytest.raises(durable.DefinitionChangedError):
        make(2, True).resume("r1", inputs={"x": 10})
    assert ran == ["before"]


def test_a_run_whose_child_was_cancelled_runs_the_edited_code(tmp_path: Path) -> None:
    store, ran = durable.open_store(str(tmp_path / "store")), []

    @durable.workflow(name="kid", store=store)
    def kid() -> int:
        return own()

    @durable.step(name="own")
    def own() -> int:
        ran.append("own")
        if len(ran) == 1:  # cancelled from inside: its run stops at the step's end
            kid.cancel(kid.runs()[0].run_id)
        return 1

    def make(v: int) -> durable.Workflow[..., int]:
        @durable.step(name="after", version=str(v))
        def after(n: int) -> int:
            ran.append(f"after{v}")
            return n + v

        @durable.workflow(name="parent", store=store, run_id="p")
        def parent() -> int:
            return after(kid())

        return parent

    with pytest.raises(durable.Cancelled):
        make(1)()
    assert [i.status for i in make(1).runs()] == ["failed"]
    kid.delete(kid.runs()[0].run_id)  # then the parent runs it afresh
    assert make(2).resume("p").value == 3
    assert ran == ["own", "own", "after2"]


def test_a_completed_run_called_while_an_error_is_handled_keeps_its_definition(tmp_path: Path) -> None:
    """Its body's end is no stop short, whatever `sys.exc_info()` shows of
    the caller's `except` block: the value it returned is its code's."""
    store = durable.open_store(str(tmp_path / "store"))

    def make(v: int) -> durable.Workflow[..., int]:
        @durable.workflow(name="wf", store=store, run_id="r1")
        def wf() -> int:
            return v  # no step: nothing recorded but its value

        return wf

    try:
        raise KeyError("handled by the caller")
    except KeyError:
        assert make(1)() == 1
    with pytest.raises(durable.DefinitionChangedError):
        make(2)()
