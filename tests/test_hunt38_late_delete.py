"""A removal (`durable rm`, `gc`) whose last batch of deletions passed the
lease check and then stalled on its way (SIGSTOP, a slow network) while
another process took the run over: the old run's manifest was gone, so the
other process started the run afresh, with records of the same names, and
the late batch deleted them. The removal then returned as if it had removed
the run (`durable rm` said so), while the run was another process's, and
its resume ran the steps whose records went again. A delete in flight cannot
be called back (removal.py), but the removal now asks for its lease once
more after its last batch and, lost, says that the run was taken over and
that its last deletion may have removed the new holder's objects."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import warnings
from typing import Any

import pytest

import durable
from durable._storage.pidspace import pid_space
from tests.test_fenced_delete import Removal

MEMORY = "memory://late-delete"
ran: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    ran.append(i)
    if i == 2:
        raise RuntimeError("not yet")
    return i * 10


@durable.workflow(name="w", run_id="r")
def flow() -> list[int]:
    return [part(i) for i in range(3)]


class StalledDelete(Removal):
    """The removal's store: its deletion of the run's segments (its last
    batch here: the run has no blobs) waits until `go`, past the lease check."""

    def __init__(self) -> None:
        self.store, self.stalled, self.go = (
            durable.open_store(MEMORY),
            threading.Event(),
            threading.Event(),
        )
        real = self.store.delete

        def stalling(keys: Any) -> None:
            keys = list(keys)
            if any("/segments/" in k for k in keys) and not self.stalled.is_set():
                self.stalled.set()
                assert self.go.wait(30)
            real(keys)

        self.store.delete = stalling  # type: ignore[method-assign]


def _looks_gone(store: durable.Store) -> None:
    """The removal's lease taken over: its holder looks gone (a dead pid)."""
    held: Any = store._held[("w", "r")]  # type: ignore[attr-defined]
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    now = time.time()
    gone = {"host": socket.gethostname(), "space": pid_space(), "pid": child.pid,
            "token": "old", "since": now, "expires": now + 60}  # fmt: skip
    durable.open_store(MEMORY).put(
        f"w/r/lease/{held.generation + 1:010d}", json.dumps(gone).encode()
    )


def test_a_removal_whose_last_batch_landed_after_a_takeover_says_so() -> None:
    with pytest.raises(RuntimeError):
        flow.with_options(store=durable.open_store(MEMORY)).run()  # parts 0, 1 recorded
    remover = StalledDelete()
    removal = remover.remove()
    _looks_gone(remover.store)
    ran.clear()
    with warnings.catch_warnings(), pytest.raises(RuntimeError):
        warnings.simplefilter("ignore")  # the old run's records, left over
        flow.with_options(store=durable.open_store(MEMORY)).run()  # a new run: 0, 1 again
    assert ran == [0, 1, 2]
    remover.go.set()  # the late batch lands: the new run's segment goes
    removal.join(30)
    assert remover.result is None, "the removal said it removed a run another process holds"
    assert isinstance(remover.error, durable.LeaseLostError), remover.error
    said = str(remover.error)
    assert "taken over" in said and "may have deleted objects" in said
    # The late batch deleted the removed run's segments by the names it
    # listed: the new run's are in its own incarnation's folder
    # (`keys.INCARNATION`), and its resume runs part 2 only.
    ran.clear()
    with pytest.raises(RuntimeError, match="not yet"):
        flow.with_options(store=durable.open_store(MEMORY)).resume("r")
    assert ran == [2]


def test_a_resume_that_finds_none_of_the_records_its_run_ended_with_refuses() -> None:
    """What the late batch left: a failed run whose manifest says two steps
    finished, and no record of them in the store. Its resume ran both again,
    silently; it now refuses (`CorruptRecordError`) and runs nothing."""
    store = durable.open_store(MEMORY)
    with pytest.raises(RuntimeError):
        flow.with_options(store=store).run()  # parts 0, 1 recorded
    store.delete([k for k in store.list("w/r/") if "/segments/" in k or "/steps/" in k])
    ran.clear()
    with pytest.raises(durable.CorruptRecordError, match="2 finished operations"):
        flow.with_options(store=durable.open_store(MEMORY)).resume("r")
    assert ran == []
