"""A sixteenth round of the peers' own test cases, on state the steps keep
in module-level values (see tests/test_peer_ports_fifteenth_state.py):
Prefect's task caching (tests/test_tasks.py `TestTaskCaching`,
`test_cache_hits_between_flows`) and joblib's Memory
(joblib/test/test_memory.py `test_memory_integration`) serve a cached
call's output without running it; here the cached step is the one that
WRITES the state (`STATE[k] = v`, `global RATE; RATE = r`) another step
reads. A hit returns the output but cannot redo the write, so the reader
would compute from the state as the import (a new process) or another run
left it. In-process (the cache is shared across runs and processes alike;
a new process is its state cleared); executions are counted by the step
bodies."""

from __future__ import annotations

import collections
import sys
import warnings
from pathlib import Path

import pytest

import durable

STATE: dict[str, int] = {}
RATE = 1
BUMPS = 0
CALLS: collections.Counter[str] = collections.Counter()


@durable.step(cache=True)
def remember(key: str, value: int) -> int:
    CALLS["remember"] += 1
    STATE[key] = value
    return value


@durable.step(cache=True)
def note(key: str, value: int) -> int:
    CALLS["note"] += 1
    STATE[key] = value
    return value


@durable.step(cache=True)
def set_rate(rate: int) -> int:
    global RATE
    CALLS["set_rate"] += 1
    RATE = rate
    return rate


@durable.step
def recall(key: str, x: int) -> int:
    CALLS["recall"] += 1
    return STATE.get(key, -1) * x * RATE


@durable.workflow(run_id=lambda v, tag: f"w{tag}")
def remember_then_recall(v: int, tag: str) -> int:
    remember("a", v)
    set_rate(v)
    return recall("a", 10)


@pytest.fixture
def cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    STATE.clear()
    CALLS.clear()
    monkeypatch.setattr(sys.modules[__name__], "RATE", 1)


@pytest.mark.usefixtures("cleared")
def test_prefect_cached_task_writing_state_another_task_reads_is_not_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two runs (two flows) make the same cached calls, the second after
    the state is cleared (what a new process holds): it must compute 2*2*10
    as the first did, so the writers run again, and they say once why they
    are not cached. Seen failing: the second run returned -10 (`remember`
    and `set_rate` served from the cache, `STATE` left empty and `RATE` 1)."""
    with pytest.warns(UserWarning) as told:
        assert remember_then_recall(2, "1") == 40
    assert [str(w.message).split(", which")[0] for w in told] == [
        f"step {remember.name} writes STATE",
        f"step {set_rate.name} writes RATE",
    ]
    STATE.clear()
    monkeypatch.setattr(sys.modules[__name__], "RATE", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # told once per step
        assert remember_then_recall(2, "2") == 40
    assert CALLS == {"remember": 2, "set_rate": 2, "recall": 2}


@pytest.mark.usefixtures("cleared")
def test_joblib_cached_function_writing_state_called_plainly_runs_each_time() -> None:
    """joblib's test_memory_integration calls the cached function plainly:
    called so, `note` is a cache lookup too; its second call, after the
    state is cleared, must put the value back. Seen failing: `STATE` stayed
    empty (the call served from the cache)."""
    with pytest.warns(UserWarning, match="step .*note writes STATE"):
        assert note("b", 3) == 3
    STATE.clear()
    assert note("b", 3) == 3
    assert STATE == {"b": 3}
    assert CALLS == {"note": 2}


@durable.step
def bump() -> int:
    global BUMPS
    CALLS["bump"] += 1
    BUMPS += 1
    return 0


@durable.step
def gate(fail: bool) -> int:
    if fail:
        raise RuntimeError("crash")
    return 0


@durable.step
def bumped() -> int:
    return BUMPS


@durable.workflow(run_id="bumped")
def bump_twice() -> int:
    bump()
    bump()
    gate(bool(STATE))
    return bumped()


@pytest.mark.usefixtures("cleared")
def test_dbos_counter_in_a_global_another_step_reads_replays_in_its_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DBOS's test_dbos.py counts with `global`/`nonlocal` counters; here a
    step bumps `global BUMPS` twice and a later step reads it. The run
    fails after both bumps; resumed in the same process (BUMPS is 2, as an
    uninterrupted run leaves it), both replay and the reader sees 2. Seen
    failing: refused ("BUMPS, which bump writes ... is not as bump left
    it"), the first bump's record holding BUMPS as 1."""
    monkeypatch.setattr(sys.modules[__name__], "BUMPS", 0)
    STATE["fail"] = 1  # `gate` raises
    with pytest.raises(RuntimeError):
        bump_twice()
    STATE.clear()
    assert bump_twice() == 2
    assert CALLS == {"bump": 2}


@durable.step
def stash(key: str) -> str:
    CALLS["stash"] += 1
    STATE[key] = 1
    return key


@durable.workflow
def filler(key: str) -> str:
    return stash(key)


@durable.step
def known() -> str:
    return ",".join(sorted(STATE))


@durable.workflow(run_id="parent")
def parent_of_filler() -> str:
    filler("k")
    gate(bool(CALLS["fail"]))
    return known()


@pytest.mark.usefixtures("cleared")
def test_dbos_child_workflow_filling_state_the_parent_reads_after_recovery() -> None:
    """DBOS's child workflows (tests/test_dbos.py recovery of a parent whose
    child ran): the child's step fills `STATE`, the parent's later step
    reads it, and the parent fails in between. Resumed with `STATE` as the
    child left it (this process), the child's result replays; with `STATE`
    empty (a new process), the parent's record of the child counts as a
    changed call, naming it; under "rerun" the child runs again. Seen
    failing: the resume replayed the child and returned "" (no uninterrupted
    run does)."""
    CALLS["fail"] = 1
    with pytest.raises(RuntimeError):
        parent_of_filler()
    with pytest.raises(RuntimeError):
        parent_of_filler()  # this process: the child replays
    CALLS["fail"] = 0
    STATE.clear()  # what a new process holds
    with pytest.raises(durable.DefinitionChangedError, match=r"filler: STATE.* which filler writes"):
        parent_of_filler()
    assert parent_of_filler.with_options(on_change="rerun")() == "k"
    assert CALLS["stash"] == 2
