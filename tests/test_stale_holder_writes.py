"""A holder on an object store that passed its lease check (`guard`) and
then stalled (a GC pause, a slow network, SIGSTOP) before its write landed,
while another process took the run over and recorded. Its writes that
replace or delete a record were unconditional (an overwriting PUT, a
DELETE): landing late, they overwrote or deleted what the new holder had
recorded, and a reader after the new holder died (before moving its records
into a segment) saw the stale holder's record, or none.

A takeover of a lease its holder did not release now first moves every
single record object into a segment of the new holder's, taking the next
segment number; a holder replaces or drops a record only in a segment
(create-only, numbered) or creates it when it has none, so a late write of
the old holder finds the number or the name taken and raises
`LeaseLostError`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import durable
from durable._storage.envelope import seal_record
from durable._storage.keys import record_name
from durable._storage.pidspace import pid_space
from durable._storage.records import StepRecord
from tests.conftest import Place

X, Y = record_name((1,)), record_name((2,))


def rec(pos: int, value: str) -> bytes:
    record = StepRecord((pos,), "step", "work", "f" * 16, "d" * 16, "json", value.encode())
    return seal_record(record.to_bytes(), None)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Stalled:
    """Holder A's store: its next write after `arm` passes the lease check,
    then waits until `go` (as a stalled process would)."""

    def __init__(self, store: Any) -> None:
        self.store, self.passed, self.go, self.error = store, threading.Event(), threading.Event(), None
        guard = store.guard

        def stalling(workflow: str, run_id: str) -> None:
            guard(workflow, run_id)
            if self.armed:
                self.armed = False
                self.passed.set()
                self.go.wait(30)

        self.armed = False
        store.guard = stalling

    def run(self, write: Callable[[], None]) -> threading.Thread:
        def body() -> None:
            try:
                write()
            except durable.LeaseLostError as e:
                self.error = e

        self.armed = True
        thread = threading.Thread(target=body)
        thread.start()
        assert self.passed.wait(30)
        return thread


def take_over(place: Place, a_held: Any) -> Any:
    """Holder A's lease taken over: its holder looks gone (a dead pid on this
    host), as after A stalled past its lease; B claims the run."""
    now = time.time()
    gone = {"host": socket.gethostname(), "space": pid_space(), "pid": _dead_pid(),
            "token": "old", "since": now, "expires": now + 60}  # fmt: skip
    place.open().put(f"w/r/lease/{a_held.generation + 1:010d}", json.dumps(gone).encode())
    b = place.open(own_client=True)
    b_held = b.acquire("w", "r", 30)
    b.load_records("w", "r")  # B reads the run, as a resume does
    return b, b_held


@pytest.fixture
def obj_place(place: Place) -> Place:
    if not place.object_leases:
        pytest.skip("a local lease is a lock held as long as its process: never taken over")
    return place


def _start(place: Place) -> tuple[Any, Any, Stalled]:
    a = place.open()
    a_held = a.acquire("w", "r", 30)
    a.save_record("w", "r", X, rec(1, "a0"))
    return a, a_held, Stalled(a)


@pytest.mark.parametrize("what", ["replace", "drop"])
def test_a_stale_holders_late_write_never_changes_what_the_new_holder_recorded(
    obj_place: Place, what: str
) -> None:
    a, a_held, stalled = _start(obj_place)
    if what == "replace":
        late = stalled.run(lambda: a.replace_record("w", "r", X, rec(1, "a1")))
    else:
        late = stalled.run(lambda: a.drop_records("w", "r", [X]))
    b, b_held = take_over(obj_place, a_held)
    b.replace_record("w", "r", X, rec(1, "b1"))  # B's own record of position 1
    stalled.go.set()
    late.join()
    # B dies (kill -9) before moving its records into a segment: what a
    # reader sees is what the store holds.
    assert obj_place.open(own_client=True).peek_records("w", "r")[X] == rec(1, "b1")
    assert isinstance(stalled.error, durable.LeaseLostError)
    b_held.release()
    assert obj_place.open(own_client=True).peek_records("w", "r")[X] == rec(1, "b1")
    a_held.release()


def test_a_stale_holders_late_write_of_a_new_name_never_overwrites_the_new_holders(
    obj_place: Place,
) -> None:
    a, a_held, stalled = _start(obj_place)
    late = stalled.run(lambda: a.replace_record("w", "r", Y, rec(2, "a2")))
    b, b_held = take_over(obj_place, a_held)
    assert b.save_record("w", "r", Y, rec(2, "b2")) is None  # B records position 2
    stalled.go.set()
    late.join()
    assert obj_place.open(own_client=True).peek_records("w", "r")[Y] == rec(2, "b2")
    assert isinstance(stalled.error, durable.LeaseLostError)
    b_held.release()
    a_held.release()
