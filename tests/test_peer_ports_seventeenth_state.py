"""The seventeenth round of the peers' own test cases (see
tests/test_peer_ports_seventeenth.py) on state the steps keep in
module-level values: DBOS's child workflows started with a workflow id of
the caller's choosing (tests/test_dbos.py `SetWorkflowID` around a child
call), whose step fills a dict the parent's later step reads, recovered
after the parent failed. In-process (a new process is the dict cleared);
executions are counted by the step bodies."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import durable

STATE: dict[str, int] = {}
CALLS: collections.Counter[str] = collections.Counter()


@durable.step
def stash(key: str) -> str:
    CALLS["stash"] += 1
    STATE[key] = 1
    return key


@durable.workflow(run_id="seventeenth-filler")
def named_filler(key: str) -> str:
    return stash(key)


@durable.step
def gate(fail: bool) -> int:
    if fail:
        raise RuntimeError("crash")
    return 0


@durable.step
def known() -> str:
    return ",".join(sorted(STATE))


@durable.workflow(run_id="seventeenth-parent")
def parent_of_named() -> str:
    named_filler("k")
    gate(bool(CALLS["fail"]))
    return known()


@pytest.fixture(autouse=True)
def cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    STATE.clear()
    CALLS.clear()


def test_dbos_child_workflow_of_a_given_id_filling_state_reruns_its_steps() -> None:
    """The parent fails after its child (run id `seventeenth-filler`, given
    by the decorator) filled `STATE`. With `STATE` empty (a new process) the
    resume is refused, naming it; under "rerun" the child's body runs
    again, its step (whose write is not as recorded) runs again, and the
    parent's reader sees the write: "k". Called again, nothing runs. Seen
    failing: the rerun returned "" (the child's completed run answered from
    its result, without the write)."""
    CALLS["fail"] = 1
    with pytest.raises(RuntimeError):
        parent_of_named()
    CALLS["fail"] = 0
    STATE.clear()  # what a new process holds
    with pytest.raises(durable.DefinitionChangedError, match=r"STATE"):
        parent_of_named()
    assert parent_of_named.with_options(on_change="rerun")() == "k"
    assert parent_of_named() == "k"
    assert CALLS["stash"] == 2


@durable.step(cache=True)
def swapped(x: int) -> int:
    CALLS["swapped"] += 1
    return x


def _writing(x: int) -> int:  # the code %autoreload puts in `swapped`
    CALLS["swapped"] += 1
    STATE["w"] = x
    return x


def test_joblib_memory_sees_the_code_swapped_into_a_cached_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """joblib's test_memory.py `test_func_dir`/code-change detection, with
    the code swapped in place (%autoreload): whether a cached step writes
    what another step reads is decided once per code, so the new code,
    which writes `STATE` (read by `known`), is not served from the cache:
    it runs at each call, with a warning."""
    assert swapped(1) == swapped(1) == 1
    assert CALLS["swapped"] == 1
    monkeypatch.setattr(swapped.__wrapped__, "__code__", _writing.__code__)  # type: ignore[attr-defined]
    with pytest.warns(UserWarning, match="STATE"):
        assert swapped(1) == swapped(1) == 1
    assert CALLS["swapped"] == 3 and STATE == {"w": 1}
