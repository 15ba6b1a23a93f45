"""`RunLockedError` for a run held by another host whose clock runs ahead of
ours by more than its lease's length (an S3 store, moto's server). Such a
lease is watched as an expired one is and taken over once it stays
unrenewed for as long as a live holder could trust it (hunt43): a gone
holder's run is taken over that long after a call's first look, whatever
its expiry says. The error's advice ("a wait of N s or more does it")
counted the expiry too, read with our clock, an hour on here: N was 3,600
and more where the takeover came after 3. The lease is another host's
owner document as written by `ownerdoc`, only with its clock an hour on."""

from __future__ import annotations

import json
import re
import time

import pytest

import durable
from durable._storage.lease import Watching

pytestmark = pytest.mark.slow  # moto's server; waits out a 2.3 s watch

TTL = 3.0  # the holder's lease: watched for 2/3 + 1/10 of it, 2.3 s


def _renewed(store: durable.Store, gen: int) -> None:
    """Generation `gen` of the lease of a holder on machine-a, an hour ahead."""
    since = time.time() + 3600 + gen
    doc = {"pid": 4242, "host": "machine-a", "space": "machine-a", "token": "t1",
           "since": since, "started": since, "expires": since + TTL}  # fmt: skip
    assert store.create(f"w/r/lease/{gen:010d}", json.dumps(doc).encode())


def test_the_wait_a_clock_ahead_holders_lock_advises_is_the_takeover_time(s3_url: str) -> None:
    store = durable.open_store(s3_url)
    _renewed(store, 1)
    with pytest.raises(Watching):  # the first look starts the watch
        store.acquire("w", "r", 30.0, block=False)
    _renewed(store, 2)  # alive: renewed within the watch
    with pytest.raises(durable.RunLockedError) as locked:
        store.acquire("w", "r", 30.0, block=False)
    said = re.search(r"a wait of (\d+) s or more does it", str(locked.value))
    assert said is not None, str(locked.value)
    advised = int(said.group(1))
    assert advised <= 4, str(locked.value)  # not an hour: the watch, 2.3 s, rounded up
    # The holder gone (no more renewals), the next call takes the run over
    # within the wait advised.
    began = time.monotonic()
    held = durable.open_store(s3_url).acquire("w", "r", 30.0)  # waits the watch out
    took = time.monotonic() - began
    held.release()
    assert took <= advised, (took, advised)
