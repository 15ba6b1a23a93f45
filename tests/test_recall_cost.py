"""What a call of a completed run builds: its `Run` without a Python
`__setattr__` call a field (`_frozen.made`, the same instance as the class
call), and its `RunCompleted` event the same way (a listener still gets it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import durable
from durable import _frozen, events
from durable._core import events as core_events
from durable._core.context import Run
from durable._frozen import made


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fields set through `Frozen.__setattr__` from now on."""
    seen: list[str] = []

    def counted(self: Any, name: str, value: Any) -> None:
        seen.append(f"{type(self).__name__}.{name}")
        object.__setattr__(self, name, value)  # its check would see this frame

    monkeypatch.setattr(_frozen.Frozen, "__setattr__", counted)
    return seen


def test_a_completed_runs_call_sets_no_field_through_a_frozen_setattr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []

    @durable.step
    def double(x: int) -> int:
        ran.append(x)
        return 2 * x

    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow(x: int) -> int:
        return double(x) + 1

    assert flow(4) == 9
    seen = _counting(monkeypatch)
    run = flow.run(4)
    assert (run.value, run.status, run.steps_executed, ran) == (9, "completed", 0, [4])
    assert seen == []  # was 16: a Run's 10 fields and a RunCompleted's 6


def test_a_listener_still_hears_a_completed_runs_call(tmp_path: Path) -> None:
    @durable.workflow(store=str(tmp_path), run_id="r")
    def flow() -> int:
        return 5

    assert flow() == 5
    heard: list[events.Event] = []
    with durable.on_event(heard.append):
        assert flow() == 5
    done = [e for e in heard if isinstance(e, events.RunCompleted)]
    assert len(done) == 1 and done[0].recorded and done[0].run_id == "r"


def test_made_is_the_class_call() -> None:
    values = ("r", "wf", "completed", [1], None, None, 0, 0, "fp", 3)
    one, other = made(Run, *values), Run(*values)
    assert one == other and repr(one) == repr(other) and type(one) is Run
    assert dataclasses.asdict(one) == dataclasses.asdict(other)
    assert list(vars(one)) == list(vars(other))  # the same layout
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.status = "failed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        made(Run, *values[:-1])  # every field, or none


def test_a_recorded_completion_is_the_class_call() -> None:
    made_one = core_events.recorded_completion("r", "wf")
    called = events.RunCompleted("r", "wf", recorded=True, time=made_one.time)
    assert made_one == called and repr(made_one) == repr(called)
    assert list(vars(made_one)) == list(vars(called))


class _Counted(frozenset[str]):
    calls = 0

    def isdisjoint(self, other: Any) -> bool:
        type(self).calls += 1
        return super().isdisjoint(other)


def test_a_run_key_is_checked_once_and_a_bad_one_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from durable._storage import keycheck

    monkeypatch.setattr(keycheck, "_BAD_KEY_CHARS", _Counted(keycheck._BAD_KEY_CHARS))
    monkeypatch.setattr(keycheck, "_VALID", set())

    @durable.workflow(store=str(tmp_path), name="keyed", run_id="r-1")
    def flow() -> int:
        return 1

    assert flow() == 1
    before = _Counted.calls
    assert flow() == 1 and flow() == 1
    assert _Counted.calls == before  # was 3 a call: the same two strings each time
    for _ in range(2):  # never kept: refused each time it is asked
        with pytest.raises(durable.ConfigurationError):
            flow.with_options(run_id="../r-1")()
    with pytest.raises(durable.ConfigurationError):
        keycheck.check_key_part("run id", "a b")
    assert "a b" not in keycheck._VALID and "../r-1" not in keycheck._VALID

    class Id(str):
        pass

    assert keycheck.check_key_part("run id", Id("r-1")) == "r-1"  # a subclass: checked whole
    assert _Counted.calls > before
