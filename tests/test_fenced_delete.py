"""A removal (`durable rm`, `Workflow.delete`, `gc`) that stalled past its
lease while another process took the run over and recorded in it: before,
the removal went on and deleted what it listed, the new holder's manifest
and segments with it (its records lost; a later call ran the steps again).
Now it asks the store, before each batch it deletes, whether it still holds
the run's lease, and stops with `LeaseLostError` when it does not: the new
holder's run is left whole."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import durable
from durable._manage.delete import delete_run
from durable._storage.pidspace import pid_space
from tests.conftest import Place


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def obj_place(place: Place) -> Place:
    if not place.object_leases:
        pytest.skip("a local lease is a lock held as long as its process: never taken over")
    return place


class Removal:
    """A removal run in a thread of its own, handed back once it stalls."""

    store: durable.Store
    stalled: threading.Event
    error: BaseException | None = None
    result: bool | None = None

    def remove(self, workflow: str = "w", run_id: str = "r") -> threading.Thread:
        def body() -> None:
            try:
                self.result = delete_run(self.store, workflow, run_id)
            except BaseException as e:
                self.error = e

        thread = threading.Thread(target=body)
        thread.start()
        assert self.stalled.wait(30)
        return thread


class StalledListing(Removal):
    """The removal's store: its listing of the run under the run's lease
    waits until `go`, as a process stopped there (SIGSTOP, a GC pause)
    would, then lists."""

    def __init__(self, store: durable.Store, prefix: str) -> None:
        self.store, self.stalled, self.go = store, threading.Event(), threading.Event()
        listing = store.list

        def stalling(at: str) -> list[str]:
            held = ("w", "r") in store._held  # type: ignore[attr-defined]
            if at == prefix and held and not self.stalled.is_set():
                self.stalled.set()
                assert self.go.wait(30)
            return listing(at)

        store.list = stalling  # type: ignore[method-assign]



def _looks_gone(place: Place, store: durable.Store) -> None:
    """The removal's lease taken over: its holder looks gone (a dead pid on
    this host), as once it stalled past its lease."""
    held: Any = store._held[("w", "r")]  # the removal's lease
    now = time.time()
    gone = {"host": socket.gethostname(), "space": pid_space(), "pid": _dead_pid(),
            "token": "old", "since": now, "expires": now + 60}  # fmt: skip
    place.open().put(f"w/r/lease/{held.generation + 1:010d}", json.dumps(gone).encode())


def test_a_removal_taken_over_stops_and_the_new_holders_run_stays_whole(
    obj_place: Place,
) -> None:
    ran: list[int] = []
    fail = [True]

    @durable.step(name="part")
    def part(i: int) -> int:
        ran.append(i)
        if i == 2 and fail[0]:
            raise RuntimeError("not yet")
        return i * 10

    @durable.workflow(name="w", run_id="r")
    def flow() -> list[int]:
        return [part(i) for i in range(4)]

    b = flow.with_options(store=obj_place.open(own_client=True))
    with pytest.raises(RuntimeError):
        b.run()  # parts 0 and 1 recorded, 2 failed
    remover = StalledListing(obj_place.open(own_client=True), "w/r/")
    removal = remover.remove("w", "r")
    _looks_gone(obj_place, remover.store)
    fail[0] = False
    assert b.resume("r").value == [0, 10, 20, 30]  # takes the run over, records 2 and 3
    remover.go.set()
    removal.join(30)
    assert isinstance(remover.error, durable.LeaseLostError), remover.error
    said = str(remover.error)
    assert "the removal stopped with" in said and "objects deleted" in said
    # What to do next, for a removal: not a workflow call's "call again to start it afresh".
    assert "once that process has ended, `durable rm r` removes it" in said
    assert "afresh" not in said
    # The new holder's run is whole: a call replays it, running nothing.
    ran.clear()
    fresh = flow.with_options(store=obj_place.open(own_client=True))
    assert fresh.resume("r").value == [0, 10, 20, 30]
    assert ran == []


def test_gc_says_which_run_it_stopped_removing_when_taken_over(obj_place: Place) -> None:
    """gc went on quietly past a run whose removal lost the lease half way:
    neither removed nor untouched, and nothing said so. It now warns with
    the removal's own message (how many objects went, what to do), leaves
    the run out of what it returns, and the new holder's run stays whole."""
    import warnings

    ran: list[int] = []

    @durable.step(name="part")
    def part(i: int) -> int:
        ran.append(i)
        if i == 1 and len(ran) == 2:
            raise RuntimeError("not yet")
        return i

    @durable.workflow(name="w", run_id="r")
    def flow() -> list[int]:
        return [part(i) for i in range(3)]

    b = flow.with_options(store=obj_place.open(own_client=True))
    with pytest.raises(RuntimeError):
        b.run()  # part 0 recorded, part 1 failed: the run is `failed`, which gc removes
    remover = StalledListing(obj_place.open(own_client=True), "w/r/")
    out: dict[str, Any] = {}

    def collect() -> None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out["removed"] = durable.gc(remover.store, status="failed", workflow="w")
        out["said"] = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]

    sweeper = threading.Thread(target=collect)
    sweeper.start()
    assert remover.stalled.wait(30)
    _looks_gone(obj_place, remover.store)
    assert b.resume("r").value == [0, 1, 2]  # takes the run over and completes it
    remover.go.set()
    sweeper.join(30)
    assert out["removed"] == []
    assert len(out["said"]) == 1 and out["said"][0].startswith("gc: run 'r': the removal stopped")
    ran.clear()
    assert flow.with_options(store=obj_place.open(own_client=True)).resume("r").value == [0, 1, 2]
    assert ran == []
