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

import ast
import collections
import sys
import warnings
from pathlib import Path
from typing import ClassVar

import pytest

import durable
from durable._fingerprint import singletons

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
def test_prefect_cached_task_writing_state_another_task_reads_is_not_served() -> None:
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
    sys.modules[__name__].RATE = 1  # type: ignore[attr-defined]
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


class Single(type):
    """A singleton metaclass (fourteenth round): `Cfg()` gives the one instance."""

    made: ClassVar[dict[type, object]] = {}

    def __call__(cls, *args: object) -> object:
        if cls not in Single.made:
            Single.made[cls] = super().__call__(*args)
        return Single.made[cls]


class Cfg(metaclass=Single):
    def __init__(self, k: int = 3) -> None:
        self.k = k


cfg_of = lambda: Cfg()  # noqa: E731  a module-level lambda: it makes nothing at import


@durable.step
def configured(x: int) -> int:
    CALLS["configured"] += 1
    return x * Cfg().k  # type: ignore[attr-defined]


@durable.workflow(run_id="made-by-the-step")
def uses_config(x: int) -> int:
    return configured(x)


@pytest.mark.usefixtures("cleared")
def test_dbos_recovery_with_a_singleton_the_step_makes_and_a_lambda_names() -> None:
    """DBOS's test_recovery_workflow with the singleton made by the step
    itself (fourteenth round), here with a module-level lambda making it
    too: the lambda's body runs when it is called, not at import, so the
    instance the step made is no state the import made, and the completed
    run called again is answered. Seen failing: DefinitionChangedError
    ("Cfg changed"), the lambda's `Cfg()` counted as a call at import."""
    Single.made.pop(Cfg, None)
    assert uses_config(2) == 6
    assert uses_config(2) == 6
    assert cfg_of() is Cfg()
    assert CALLS == {"configured": 1}


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("get = lambda: Cfg()", False),
        ("get = lambda: Cfg()\nget()", True),  # called at import: made then
        ("get = lambda c=Cfg(): c", True),  # a default runs at import
        ("run(lambda: Cfg())", True),  # handed to a call, which may call it
    ],
)
def test_a_named_lambda_makes_the_singleton_when_called(text: str, made: bool) -> None:
    """What the fix narrows, and what it keeps counting (fail closed)."""
    body = tuple(ast.parse(text).body)
    assert singletons._calls_at_import(body, "Cfg") is made


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
