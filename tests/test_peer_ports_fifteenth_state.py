"""The fifteenth round of the peers' own test cases (see
tests/test_peer_ports_fifteenth.py) on state the steps keep in module-level
values: DBOS's tests/test_dbos.py counts executions in module globals and
Prefect's task caching (tests/test_tasks.py `TestTaskCaching`) serves a
cached task's output; here a cached step reads a dict another step fills
(`STATE[k] = v`), or a number a step rebinds with `global`, and a step
counts its own calls in a Counter. In-process (no process boundary is the
point); executions are counted by the step bodies."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

import durable

STATE: dict[str, int] = {}
RATE = 1
CALLS: collections.Counter[str] = collections.Counter()


@durable.step
def put(key: str, value: int) -> int:
    CALLS["put"] += 1
    STATE[key] = value
    return value


@durable.step(cache=True)
def get(key: str) -> int:
    CALLS["get"] += 1
    return STATE.get(key, -1)


@durable.step
def set_rate(rate: int) -> int:
    global RATE
    CALLS["set_rate"] += 1
    RATE = rate
    return rate


@durable.step(cache=True)
def scaled(x: int) -> int:
    CALLS["scaled"] += 1
    return x * RATE


@durable.step(cache=True)
def counted(x: int) -> int:
    CALLS["counted"] += 1  # a counter it only bumps: no input of its output
    return x


@durable.workflow(run_id=lambda v: f"r{v}")
def fill_then_read(v: int) -> list[int]:
    put("a", v)
    set_rate(v)
    return [get("a"), scaled(10), counted(1)]


@pytest.fixture
def cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    STATE.clear()
    CALLS.clear()
    monkeypatch.setattr(sys.modules[__name__], "RATE", 1)


@pytest.mark.usefixtures("cleared")
def test_prefect_cached_tasks_reading_state_another_task_fills() -> None:
    """Two runs filling the dict (and the rate) with 1, then 2, then the
    first run called again: each run's own values, the cached readers
    computed once per state, the counter-only step once in all. Seen
    failing: run 2 returned [1, 10, 1], served run 1's cached outputs (the
    dict and the rate counted by their statements, `STATE = {}` and
    `RATE = 1`, whatever the steps had put there)."""
    assert fill_then_read(1) == [1, 10, 1]
    assert fill_then_read(2) == [2, 20, 1]
    assert fill_then_read(1) == [1, 10, 1]  # the completed run, answered again
    assert (get("a"), scaled(10)) == (2, 20)  # the state now is run 2's: hits
    assert CALLS == {"put": 2, "get": 2, "set_rate": 2, "scaled": 2, "counted": 1}


@durable.workflow(run_id="crash")
def fill_then_crash(fail: bool) -> int:
    put("a", 5)
    if fail:
        raise RuntimeError("crash")
    return STATE["a"]


@pytest.mark.usefixtures("cleared")
def test_dbos_recovery_of_a_step_filling_a_module_level_dict() -> None:
    """The run fails after `put` (a crash). Resumed in the same process
    (the dict as `put` left it), `put` replays; resumed in a process that
    never ran it (the dict empty again), `put`'s replay could not redo what
    it put in the dict the body reads, so the resume is refused naming the
    dict; under `on_change="rerun"` `put` runs again and the run returns 5;
    called again, the completed run executes nothing. Seen failing: the
    resume in a new process replayed `put` and the body raised KeyError
    (an uninterrupted run never leaves the dict empty)."""
    with pytest.raises(RuntimeError):
        fill_then_crash(True)
    with pytest.raises(RuntimeError):
        fill_then_crash(True)  # the same process: replayed
    STATE.clear()  # what a new process holds
    with pytest.raises(durable.DefinitionChangedError, match=r"- [\w.]*put: STATE, which .*put writes"):
        fill_then_crash(False)
    assert fill_then_crash.with_options(on_change="rerun")(False) == 5
    assert fill_then_crash(False) == 5
    assert CALLS == {"put": 2}
