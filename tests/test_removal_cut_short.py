"""A removal (`durable rm`, `gc`, `Workflow.delete`) killed part way must
leave either the run as it was or no run: never a manifest whose records
are gone (its resume ran again every step the run lists as done) nor a
cancel marker without a run (it cancelled the next run of that id)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.clikit import REPO

executed: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    executed.append(i)
    return i + 1


@durable.workflow(name="parts")
def parts(stop: str = "") -> list[int]:
    if stop == "before":
        durable.suspend("before any step")
    done = [part(i) for i in range(3)]
    if stop == "after":
        raise RuntimeError("failed after its steps")
    return done


# `durable rm` of the run, killed (SIGKILL, by itself) once its first object is deleted.
RM_KILLED = """
import os, signal, sys
import durable
from durable._storage.local import LocalStore
from tests.test_removal_cut_short import parts
real = LocalStore.delete
def delete(self, keys):
    real(self, list(keys)[:1])
    os.kill(os.getpid(), signal.SIGKILL)
LocalStore.delete = delete
parts.with_options(store=durable.open_store(sys.argv[1])).delete("R")
"""


def _rm_killed(store: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RM_KILLED, str(store)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == -9, done.stderr


def _runs_afresh(store: durable.Store) -> None:
    """The run is gone: `resume` finds none, and a call of its id runs every step once."""
    with pytest.raises(durable.RunNotFoundError):
        parts.with_options(store=store).resume("R")
    assert [r.run_id for r in parts.with_options(store=store).runs()] == []
    executed.clear()
    with pytest.warns(UserWarning, match="left over"):
        run = parts.with_options(store=store, run_id="R").run()
    assert (run.value, executed, run.steps_replayed) == ([1, 2, 3], [0, 1, 2], 0)


def test_a_removal_killed_after_its_first_object_leaves_no_run_with_lost_records(
    tmp_path: Path,
) -> None:
    store = durable.open_store(tmp_path / "store")
    with pytest.raises(RuntimeError):
        parts.with_options(store=store, run_id="R")("after")
    _rm_killed(tmp_path / "store")
    _runs_afresh(store)


def test_a_removal_of_a_cancelled_run_killed_part_way_leaves_no_marker_behind(
    tmp_path: Path,
) -> None:
    store = durable.open_store(tmp_path / "store")
    with pytest.raises(durable.Suspended):
        parts.with_options(store=store, run_id="R")("before")
    assert parts.with_options(store=store).cancel("R").status == "cancelled"
    _rm_killed(tmp_path / "store")
    _runs_afresh(store)
