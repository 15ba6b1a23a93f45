"""A run whose attempts failed (or were interrupted) before recording
anything kept the definition of the code that failed: the usual fix, an
edit of the failing step, was refused as changed code although the run
held nothing that code made (nothing to be stale about), and only a
restart ran it. A run that recorded a step is still refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import durable


def _flows(tmp_path: Path) -> tuple[Callable[[int, bool], Callable[[], int]], list[str]]:
    """`make(v, first)`: run r1 of workflow wf whose step `a` is version v
    (failing at v 1), after step `first` when asked; each body counted."""
    store, ran = durable.open_store(str(tmp_path / "store")), []

    def make(v: int, first: bool = False) -> Callable[[], int]:
        @durable.step(name="before", version="1")
        def before() -> int:
            ran.append("before")
            return 0

        @durable.step(name="a", version=str(v))
        def a() -> int:
            ran.append(f"a{v}")
            if v == 1:
                raise ValueError("a bug")
            if v == 2:
                raise KeyboardInterrupt
            return v

        @durable.workflow(name="wf", store=store, run_id="r1")
        def wf() -> int:
            return (before() if first else 0) + a()

        return wf

    return make, ran


def test_a_run_that_failed_before_recording_anything_runs_the_fixed_code(tmp_path: Path) -> None:
    make, ran = _flows(tmp_path)
    with pytest.raises(ValueError):
        make(1)()
    with pytest.raises(KeyboardInterrupt):
        make(2)()  # other code: runs, and is interrupted, recording nothing
    assert make(3)() == 3
    assert ran == ["a1", "a2", "a3"]
    assert make(3)() == 3  # completed: replayed
    assert ran == ["a1", "a2", "a3"]


def test_a_run_that_recorded_a_step_is_still_refused(tmp_path: Path) -> None:
    make, ran = _flows(tmp_path)
    with pytest.raises(ValueError):
        make(1, True)()
    with pytest.raises(durable.DefinitionChangedError):
        make(3, True)()
    assert ran == ["before", "a1"]
