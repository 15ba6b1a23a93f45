"""perf49: a workflow whose module fills a global from outside at import
(`N = int(os.environ[...])`) made every step of its runs take the full
identification path at every call (`bound.Body.fills`): `StepSpec.plain_in`
now notes a step plain when its code, and the helpers it names, name none
of the filled globals (`unfilled.reads_no_fill`), and keeps the full path for
one that names one, reaches `globals()`, or calls a helper that names one."""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Callable
from os.path import join
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import durable
from durable._core import bound
from durable._core.bound import held_by
from durable._core.spec import StepSpec
from durable._core.unfilled import reads_no_fill
from durable._fingerprint.derived import OUTSIDE, made_in

N = int(os.environ.get("PERF49_N", "3"))  # filled from outside: the lead's `n = int(sys.argv[1])`
CONFIG = json.loads(os.environ.get("PERF49_CONFIG", '{"k": 0}'))  # an object filled so
SETTINGS = CONFIG  # the same object, under another name


@durable.step(name="alone")
def alone(i: int) -> int:
    print(f"alone {i}")  # counted by capsys: no module state written
    return i + 1


@durable.step(name="names_n")
def names_n(i: int) -> int:
    print(f"names_n {i}")  # counted by capsys: no module state written
    return i + N


def _helper() -> int:
    return N


@durable.step(name="via_helper")
def via_helper(i: int) -> int:
    print(f"via_helper {i}")  # counted by capsys: no module state written
    return i + _helper()


@durable.step(name="via_globals")
def via_globals(i: int) -> int:
    print(f"via_globals {i}")  # counted by capsys: no module state written
    return i + globals()["N"]


FAIL: list[int] = []


class _Holder:
    @staticmethod
    def get() -> int:
        return N


@durable.step(name="via_class")
def via_class(i: int) -> int:
    print(f"via_class {i}")  # counted by capsys: no module state written
    return i + _Holder.get()


def _setting() -> int:
    return int(SETTINGS["k"]) + 3


@durable.step(name="via_alias")
def via_alias(i: int) -> int:
    print(f"via_alias {i}")  # counted by capsys: no module state written
    return i + _setting()


@durable.step(name="via_library")
def via_library(i: int) -> int:
    print(f"via_library {i}")  # counted by capsys: no module state written
    return i + len(join("a", "b")) - 3 + len(PurePosixPath("x").name) - 1  # i + 0


def _flow(tmp_path: Path, step: Callable[[int], int]) -> Any:
    def flow() -> int:
        total = sum(step(i) for i in range(N)) + len(CONFIG) - 1
        if FAIL:  # the first attempt fails after its steps: a resume replays them
            FAIL.clear()
            raise RuntimeError("once")
        return total

    store = durable.open_store(tmp_path / "s", durability="none")
    return durable.workflow(store=store, run_id="r", name="perf49f")(flow)


def _failed(flow: Callable[[], int]) -> str:
    with pytest.raises(RuntimeError) as e:
        flow()
    return str(e.value)


def _calls(code: types.CodeType, body: Callable[[], Any]) -> tuple[int, Any]:
    """How many times `code` runs while `body` does, and what it returned."""
    count = [0]

    def seen(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is code:
            count[0] += 1

    sys.setprofile(seen)
    try:
        value = body()
    finally:
        sys.setprofile(None)
    return count[0], value


def ran(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_step_naming_no_filled_global_is_identified_once_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = _flow(tmp_path, alone)
    FAIL.append(1)
    assert _calls(held_by.__code__, lambda: _failed(flow)) == (1, "once")  # was 3: once a call
    assert _calls(held_by.__code__, lambda: flow.resume("r").value) == (1, 6)
    assert ran(capsys) == ["alone 0", "alone 1", "alone 2"]


@pytest.mark.parametrize("step", [alone, via_library])
def test_a_step_calling_only_library_code_is_identified_once_a_run(
    tmp_path: Path, step: Callable[[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    flow = _flow(tmp_path, step)
    assert _calls(held_by.__code__, flow)[0] == 1  # a function and a class of the library
    assert len(ran(capsys)) == 3


@pytest.mark.parametrize("step", [names_n, via_helper, via_globals, via_class, via_alias])
def test_a_step_reading_a_filled_global_keeps_the_full_path(
    tmp_path: Path, step: Callable[[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    flow = _flow(tmp_path, step)
    calls, value = _calls(held_by.__code__, flow)
    assert calls >= 3 and value == 12  # at every call
    assert len(ran(capsys)) == 3


def _fn(step: object) -> Any:
    cells = [c.cell_contents for c in step.__closure__ or ()]  # type: ignore[attr-defined]
    (spec,) = [c for c in cells if isinstance(c, StepSpec)]
    return spec.fn


def test_the_decision_is_the_one_read_from_body_makes() -> None:
    def flow() -> int:
        return sum(alone(i) for i in range(N)) + len(CONFIG)

    (body,) = bound.body_of(flow, {})
    assert made_in(flow).stored == {"N": frozenset({OUTSIDE}), "CONFIG": frozenset({OUTSIDE})}
    assert body.fills and reads_no_fill(_fn(alone), (body,))
    for step in (names_n, via_helper, via_globals, via_class, via_alias):
        assert not reads_no_fill(_fn(step), (body,))
