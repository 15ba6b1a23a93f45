"""A holder's renewal stalled (SIGSTOP) between deciding to claim the next
generation and writing it: meanwhile another process took the run over and
its renewals deleted that generation. The late create-only write succeeds
(the key is free again) but the holder has lost: it must take its stray
object away, so that a holder past its lease leaves the store as the taker
left it (test_fencing's snapshot saw it under load)."""

from __future__ import annotations

import json

from durable._storage.lease import owner_doc
from durable._storage.objectlease import ObjectLease

from .test_object_lease_race import RacyObjects

PREFIX = "w/r/lease/"


def test_a_late_claim_below_the_newest_generation_is_lost_and_taken_away() -> None:
    objects = RacyObjects(1)
    held = ObjectLease(objects, PREFIX, 30, "r")
    assert objects.list(PREFIX) == [f"{PREFIX}0000000001"]
    # The taker: generation 2, then its renewal 3, each deleting the one below.
    taker = json.dumps(owner_doc(30, "taker-token", 0.0)).encode()
    objects.create(f"{PREFIX}0000000003", taker)
    objects.delete([f"{PREFIX}0000000001"])
    assert held._claim(2, []) is False  # the stalled renewal's write lands now
    assert objects.list(PREFIX) == [f"{PREFIX}0000000003"]
    assert objects.get(f"{PREFIX}0000000003") == taker
    held.release()
    assert objects.list(PREFIX) == [f"{PREFIX}0000000003"]  # nothing of ours to give up
