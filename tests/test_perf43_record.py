"""The checks of a recorded step's write on a local store, kept where
perf43 shortened the way there (`LocalStore.save_record`, the flock taken
through `oslock.flock`, `RunLog._caught_up` comparing the file's identity
field by field): the lease checked right before the write, the log locked
while it is written, and a log replaced by one of the same size read anew."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

import durable
from durable._storage import log as runlog
from durable._storage.keys import record_name
from durable._storage.log import RunLog


def test_a_lease_lost_while_the_body_runs_writes_no_record(tmp_path: Path) -> None:
    """The lease file renamed away inside a step's body (after the check
    made before it ran): the step's record is refused, not written."""
    store = durable.open_store(tmp_path)
    ran: list[int] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        ran.append(i)
        if i == 1:
            lease = tmp_path / "lost" / "r" / "lease"
            os.rename(lease, lease.with_name("lease.old"))
        return i

    @durable.workflow(name="lost", run_id="r", store=store)
    def flow() -> list[int]:
        return [work(0), work(1), work(2)]

    with pytest.raises(durable.LeaseLostError) as info:
        flow()
    assert ran == [0, 1]
    assert info.value.position == 1
    assert store.record_names("lost", "r") == ["steps/00000000"]


def test_a_held_log_is_locked_while_a_step_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another open file of the log cannot take its lock while a recorded
    step's entry is written (create-only holds against other writers)."""
    seen: list[bool] = []
    real = runlog.write_all

    def probed(fd: int, frame: bytes) -> None:
        other = os.open(tmp_path / "locked" / "r" / runlog.LOG_NAME, os.O_RDONLY)
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(False)  # taken: the writer did not hold it
        except BlockingIOError:
            seen.append(True)
        finally:
            os.close(other)  # drops a lock taken here
        real(fd, frame)

    monkeypatch.setattr(runlog, "write_all", probed)
    store = durable.open_store(tmp_path, durability="none")

    @durable.step(name="work")
    def work(i: int) -> int:
        return i

    @durable.workflow(name="locked", run_id="r", store=store)
    def flow() -> list[int]:
        return [work(0), work(1), work(2)]

    assert flow() == [0, 1, 2]
    assert seen[-3:] == [True, True, True]


def test_a_log_replaced_by_one_of_the_same_size_is_read_anew(tmp_path: Path) -> None:
    """A held log whose file was replaced after it was read, by another of
    exactly its size: the size cannot tell, the file's identity does, and
    create-only answers from the new file."""
    path, other = tmp_path / "records.log", tmp_path / "other.log"
    first = RunLog(str(path), "r")
    assert first.create(record_name(0), b"aaaa") is None
    log = RunLog(str(path), "r")
    log.load()
    log.hold("none", 1.0)
    assert RunLog(str(other), "r").create(record_name(3), b"bbbb") is None
    assert os.path.getsize(other) == os.path.getsize(path)
    os.replace(other, path)
    assert log.create(record_name(3), b"late") == b"bbbb"  # create-only: theirs
    assert log.create(record_name(0), b"anew") is None  # the old file's record is gone
    log.release()
    assert RunLog(str(path), "r").load() == {record_name(3): b"bbbb", record_name(0): b"anew"}
