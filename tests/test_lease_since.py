"""`RunLockedError` and `--wait`'s line (the `RunWaiting` event) say since
when the run has been executed: the start of its holder's lease, kept
across renewals. On an object store each renewal writes a new owner
document, and its time was given: a run executing for an hour read as
`since` a few seconds ago."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

import durable
from durable import events


def test_a_held_runs_since_is_its_start_not_its_last_renewal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here waits on the scheduler. The lease lasts 30 s (one of
    0.6 s expired on a loaded machine, its renewals late, and the run was
    taken over); the renewal is made at once (`confirm`, a renewal as the
    holder's thread makes it), not awaited. The wait (`wait=`) runs on a
    clock that passes its deadline once the waiter said whom it waits for:
    with `wait=0.01` on real time, a first look at the lease that took
    longer than that ended the wait before it said so."""
    from durable._core import waiting
    from durable._core.context import current_state

    store = durable.open_store(f"memory://since-{uuid.uuid4().hex}", lease_ttl=30)
    release, inside = threading.Event(), threading.Event()
    held: list[Any] = []

    @durable.step
    def hold() -> int:
        state = current_state()
        assert state is not None
        held.append(state.lease)
        inside.set()
        release.wait(60)
        return 1

    @durable.workflow(store=store, run_id="r")
    def flow() -> int:
        return hold()

    def locked(**options: Any) -> durable.RunLockedError:
        with pytest.raises(durable.RunLockedError) as caught:
            flow.with_options(**options)()
        return caught.value

    class Clock:
        """`time` as the wait reads it: past any deadline once it said so."""

        ahead = 0.0

        def monotonic(self) -> float:
            return time.monotonic() + self.ahead

    clock = Clock()
    monkeypatch.setattr(waiting, "time", clock)

    def seen_waiting(e: object) -> None:
        if isinstance(e, events.RunWaiting):
            seen.append(e)
            clock.ahead = 3600.0

    before = time.time()
    holder = threading.Thread(target=flow)
    holder.start()
    seen: list[events.RunWaiting] = []
    try:
        assert inside.wait(60)
        first = locked()
        held[0].lease.confirm()  # a renewal: a new owner document on an object store
        renewed = locked()
        with durable.on_event(seen_waiting):
            again = locked(wait=30)
    finally:
        release.set()
        holder.join(60)
    assert renewed.expires > first.expires  # renewed indeed
    assert before <= first.since <= first.expires - 29
    assert renewed.since == again.since == first.since  # the start, kept across renewals
    assert [e.since for e in seen] == [first.since]  # what `durable run --wait` prints
    assert again.waited == 30  # the wait the caller asked for, said


def test_a_lease_written_by_a_version_without_started_still_reads() -> None:
    """A holder running the previous version writes no `started`: the run is
    refused as held, since its document's `since`, not raised from."""
    import json
    import os
    import socket

    from durable._storage.keys import lease_key

    store = durable.open_store(f"memory://since-old-{uuid.uuid4().hex}")
    now = time.time()
    doc = {"host": socket.gethostname(), "pid": os.getppid(), "token": "old", "since": now - 5,
           "expires": now + 60}  # fmt: skip
    store.put(f"{lease_key('w', 'r')}/{1:010d}", json.dumps(doc).encode())

    @durable.workflow(store=store, run_id="r", name="w")
    def flow() -> int:
        return 1

    with pytest.raises(durable.RunLockedError) as caught:
        flow()
    assert caught.value.since == now - 5
