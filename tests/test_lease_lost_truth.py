"""What `LeaseLostError` says was written. A holder on an object store
writes a step's record as its own object, then (when due) moves records
into a segment, each write checked against the lease. A lease found lost at
that flush, after the record had landed, was reported as "nothing from
position 2 on was recorded", while record 2 was in the store."""

from __future__ import annotations

import time
from typing import Any

import pytest

import durable
from durable._storage import segmenter
from durable._storage.keys import record_name


def _store_losing_lease_after(name: str) -> tuple[durable.Store, list[str]]:
    """A memory store whose run lease is found lost right after the create
    of record `name` landed (as a renewal that found a takeover sets it)."""
    store: Any = durable.open_store(f"memory://truth-{time.monotonic_ns()}")
    created: list[str] = []
    create = store.create

    def creating(key: str, data: bytes) -> bool:
        done: bool = create(key, data)
        created.append(key)
        if key.endswith(name):
            for held in store._held.values():
                held.lost = True
        return done

    store.create = creating
    return store, created


def test_a_lease_lost_after_the_record_landed_says_the_record_was_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 1)  # a flush due after each record
    store, created = _store_losing_lease_after(record_name((2,)))
    ran: list[int] = []

    @durable.step
    def work(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=store, run_id="r", name="w")
    def w() -> list[int]:
        return [work(i) for i in range(4)]

    with pytest.raises(durable.LeaseLostError) as err:
        w()
    assert ran == [0, 1, 2]
    assert any(k.endswith(record_name((2,))) for k in created)
    assert record_name((2,)) in store.peek_records("w", "r")  # it is there
    text = str(err.value)
    assert "nothing from position 2 on was recorded" not in text
    assert "the record at position 2 was written before that was found" in text
    assert "no later step was started" in text
    assert err.value.written


def test_a_lease_lost_before_the_record_says_nothing_was_recorded() -> None:
    ran: list[int] = []
    store: Any = durable.open_store(f"memory://truth-{time.monotonic_ns()}")

    @durable.step
    def work(i: int) -> int:
        ran.append(i)
        if i == 1:
            for held in store._held.values():
                held.lost = True
        return i

    @durable.workflow(store=store, run_id="r", name="w")
    def w() -> list[int]:
        return [work(i) for i in range(3)]

    with pytest.raises(durable.LeaseLostError, match="nothing from position 1 on was recorded"):
        w()
    assert ran == [0, 1] and record_name((1,)) not in store.peek_records("w", "r")
