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
from durable.testing._base import wait_for


def test_a_held_runs_since_is_its_start_not_its_last_renewal() -> None:
    store = durable.open_store(f"memory://since-{uuid.uuid4().hex}", lease_ttl=0.6)
    release, inside = threading.Event(), threading.Event()

    @durable.step
    def hold() -> int:
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

    before = time.time()
    holder = threading.Thread(target=flow)
    holder.start()
    try:
        assert inside.wait(60)
        first = locked()
        wait_for(lambda: locked().expires > first.expires)  # renewed since (every 0.2 s)
        seen: list[events.RunWaiting] = []
        with durable.on_event(lambda e: seen.append(e) if isinstance(e, events.RunWaiting) else None):
            again = locked(wait=0.01)
    finally:
        release.set()
        holder.join(60)
    assert before <= first.since <= first.expires - 0.5
    assert again.since == first.since  # the start, kept across renewals
    assert [e.since for e in seen] == [first.since]  # what `durable run --wait` prints
