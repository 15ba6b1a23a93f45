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
