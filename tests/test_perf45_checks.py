"""The system calls of a recorded step that perf45 tried to spare, and the
case each one catches that the cheaper way did not.

A holder's lease check looks its lease file up by path, each time
(`FileLease.check`): a folder above the lease file renamed away leaves the
file itself untouched (its link count, size, times and identity stay as
the holder knows them), yet another process may now make a lease file at
the path and run the run there. A check that asked only the file the
holder keeps open (`fstat` of its descriptor: a cheaper call) would let the
holder go on; the check by path stops it. And the log's lock is taken for
each append, not for the whole run."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

import durable


@pytest.mark.parametrize("folder", ["run", "workflow", "store"])
def test_a_folder_above_the_lease_renamed_between_steps_stops_the_holder(
    tmp_path: Path, folder: str
) -> None:
    root = tmp_path / "s"
    store = durable.open_store(root)
    ran: list[int] = []
    moved = {"run": root / "moved" / "r", "workflow": root / "moved", "store": root}[folder]

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(name="moved", run_id="r", store=store)
    def flow() -> list[int]:
        out = [work(0), work(1)]
        os.rename(moved, moved.with_name(moved.name + ".old"))  # between two steps
        return [*out, work(2), work(3)]

    with pytest.raises(durable.LeaseLostError) as info:
        flow()
    assert ran == [0, 1]  # the body of step 2 never ran
    assert info.value.position == 2
    assert not (root / "moved" / "r").exists()  # nothing was written at the path either
    where = {"run": (root, "moved", "r.old"), "workflow": (root, "moved.old", "r")}
    at, workflow, run = where.get(folder, (root.with_name("s.old"), "moved", "r"))
    names = durable.open_store(at).record_names(workflow, run)
    assert names == ["steps/00000000", "steps/00000001"]


def test_a_folder_above_the_lease_renamed_in_a_body_writes_nothing(tmp_path: Path) -> None:
    """The same move inside a step's body, after the check made before it:
    the check made again before its record is written refuses it."""
    root = tmp_path / "s"
    store = durable.open_store(root, durability="none")
    ran: list[int] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        if i == 1:
            os.rename(root / "inbody" / "r", root / "inbody" / "r.old")
        return i

    @durable.workflow(name="inbody", run_id="r", store=store)
    def flow() -> list[int]:
        return [work(0), work(1), work(2)]

    with pytest.raises(durable.LeaseLostError) as info:
        flow()
    assert ran == [0, 1]
    assert info.value.position == 1
    assert not (root / "inbody" / "r").exists()
    names = durable.open_store(root).record_names("inbody", "r.old")
    assert names == ["steps/00000000"]


def test_the_log_is_not_locked_between_steps(tmp_path: Path) -> None:
    """The log's lock is taken for each append only: held for the whole run
    (two system calls a step fewer, tried by perf45), a process that takes
    the run over (the lease file moved away from a holder in a long body, or
    stopped) would wait in its resume's read of the log for as long as the
    old holder lives."""
    store = durable.open_store(tmp_path, durability="none")
    free: list[bool] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        return i

    def lockable() -> bool:
        other = os.open(tmp_path / "unlocked" / "r" / "records.log", os.O_RDONLY)
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(other)  # drops a lock taken here

    @durable.workflow(name="unlocked", run_id="r", store=store)
    def flow() -> list[int]:
        out = [work(0)]
        free.append(lockable())
        out.append(work(1))
        free.append(lockable())
        return out

    assert flow() == [0, 1]
    assert free == [True, True]
