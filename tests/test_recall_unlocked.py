"""A completed run's call answers from its manifest without taking the run's
lease (`_core.recall`), with every check of the locked path: anything but
this very call of a completed run still goes through the lease."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import durable
from durable.testing import memory_store

RATE = 2


def _flow(tmp_path: Path, ran: list[int]) -> durable.Workflow[[int], int]:
    @durable.step
    def double(x: int) -> int:
        ran.append(x)
        return x * RATE

    @durable.workflow(store=str(tmp_path), name="wf", run_id="r")
    def flow(x: int = 1) -> int:
        return double(x) + 1

    return flow


def test_a_completed_runs_call_answers_while_another_holds_its_lease(tmp_path: Path) -> None:
    ran: list[int] = []
    flow = _flow(tmp_path, ran)
    assert flow(1) == 3
    held = durable.open_store(str(tmp_path)).lease("wf", "r", 30.0)  # another holder
    try:
        assert flow(1) == 3  # read from the manifest: the lease was never asked for
        assert flow.resume("r").value == 3
        assert ran == [1]
        with pytest.raises(durable.RunLockedError):  # another argument: under the lease
            flow(2)
        with pytest.raises(durable.RunLockedError):  # starting afresh: under the lease
            flow.with_options(restart=True)(1)
    finally:
        held.release()
    assert ran == [1]


def test_every_check_of_a_completed_run_holds_without_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []
    flow = _flow(tmp_path, ran)
    assert flow(1) == 3
    with pytest.raises(durable.DefinitionChangedError, match="argument"):
        flow(2)  # the same run id, another argument
    with monkeypatch.context() as m:
        m.setattr(sys.modules[__name__], "RATE", 3)  # a global the step reads
        with pytest.raises(durable.DefinitionChangedError):
            flow(1)
    assert flow(1) == 3
    assert flow.with_options(restart=True)(1) == 3  # runs again: never the recorded result
    assert ran == [1, 1]
    manifest = tmp_path / "wf" / "r" / "run"
    manifest.write_bytes(manifest.read_bytes()[:-3] + b"xyz")
    with pytest.raises(durable.CorruptRecordError):
        flow(1)
    assert ran == [1, 1]


@pytest.mark.parametrize("local", [True, False])
def test_a_peek_at_the_manifest_moves_no_version_a_writer_compares(
    tmp_path: Path, local: bool
) -> None:
    """Read without the lease, the version must not become the one a
    holder in this process swaps against."""
    store = durable.open_store(str(tmp_path)) if local else memory_store()
    store.save_manifest("wf", "r", b"first")
    seen = dict(store._seen)
    assert store.peek_manifest("wf", "r") == b"first"
    assert store.peek_manifest("wf", "other") is None
    assert store._seen == seen


def _same(x: int) -> int:
    return x


def test_a_completed_runs_call_with_keep_last_still_removes_older_runs(tmp_path: Path) -> None:
    kept = durable.workflow(store=str(tmp_path), name="wf")(_same)
    assert (kept(1), kept(2)) == (1, 2)
    pruned = durable.workflow(store=str(tmp_path), name="wf", keep_last=1)(_same)
    assert pruned(2) == 2  # the completed run's result, then the retention of every call
    assert [info.run_id for info in pruned.runs()] == [kept.run(2).run_id]


def test_a_completed_runs_call_still_writes_its_progress_file(tmp_path: Path) -> None:
    progress = tmp_path / "progress.json"
    flow = durable.workflow(store=str(tmp_path / "s"), run_id="r", progress_file=progress)(_same)
    assert flow(4) == 4
    progress.unlink()
    assert flow(4) == 4
    assert json.loads(progress.read_text())["status"] == "completed"


def test_a_completed_run_with_artifacts_is_checked_under_the_lease(tmp_path: Path) -> None:
    """Its artifacts are told from its records, read as a holder reads them."""
    made = tmp_path / "made.txt"

    @durable.step
    def write() -> int:
        made.write_text("x")
        durable.artifact(str(made))
        return 1

    @durable.workflow(store=str(tmp_path / "s"), name="wf", run_id="r")
    def flow() -> int:
        return write()

    assert flow() == 1
    held = durable.open_store(str(tmp_path / "s")).lease("wf", "r", 30.0)
    try:
        with pytest.raises(durable.RunLockedError):
            flow()
    finally:
        held.release()
    assert flow() == 1
