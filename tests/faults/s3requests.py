"""S3 request failures on a run that writes segments (faults11).

`segmented_request_faults`: a run on S3 writing a segment every 2 records,
through a proxy in front of moto that fails one request of the run in turn,
a PUT (the lease, the manifest, a record, a blob, a segment), a GET (a
listing, a read of the lease, the manifest, a segment or a record: faults12)
or a DELETE (the single objects a segment covers, older generations), as an
outage: that request and the client's tries of it again, until the client
sends another. Each way a
request fails: its answer lost once S3 stored it ("500-after",
"reset-after"), or failed before S3 has it ("500-before", "reset-mid"). The
run must return the right value or fail with `StorageError`; then a resume
(no faults) returns the right value, every record reads back exactly once,
and no step recorded before the failure runs again."""

from __future__ import annotations

import random
from collections import Counter

import durable
from durable._storage import segmenter
from tests import s3proxy
from tests.faults import flows
from tests.faults.common import Outcome, Place, check_counts, executions, new_run_id, recorded

N = 6
WAYS = ("500-after", "reset-after", "500-before", "reset-mid")
METHODS = ("PUT", "GET", "DELETE")
# How many requests of each kind a run makes, about: the one failed is one of them.
REACH = {"PUT": 14, "GET": 14, "DELETE": 5}


def _store(place: Place, endpoint: str | None) -> durable.Store:
    """The place's store (through `endpoint` when given), the client trying
    each request twice, with no backoff to wait for."""
    store = place.store()
    if endpoint is None:
        return store
    options = {
        "endpoint_url": endpoint, "skip_instance_cache": True, "lease_ttl": 30,
        "blob_threshold": 2048,
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2, "read_timeout": 5},
    }  # fmt: skip
    store = durable.open_store(place.url, **options)
    store.fs.retries = 2  # type: ignore[attr-defined]  # s3fs's own retry loop
    return store


def segmented_request_faults(
    place: Place, endpoint: str, trials: int, rng: random.Random
) -> Outcome:
    outcome = Outcome("S3 request failures, segments")
    saved = segmenter.SEGMENT_RECORDS
    segmenter.SEGMENT_RECORDS = 2
    try:
        with s3proxy.serving(endpoint) as (via, faults):
            for _ in range(trials):
                _trial(place, via, faults, outcome, rng)
    finally:
        segmenter.SEGMENT_RECORDS = saved
    return outcome


def _trial(
    place: Place, via: str, faults: s3proxy.Faults, outcome: Outcome, rng: random.Random
) -> None:
    method = rng.choice(METHODS)
    run_id, how, at = new_run_id("requests"), rng.choice(WAYS), rng.randrange(1, REACH[method])
    outage = method == "PUT" or rng.random() < 0.5  # else once: the client's next try goes through
    trial = f"{run_id}: {method} {at} {how}{' (outage)' * outage}"
    outcome.trials += 1
    place.log.write_text("")
    faults.fail(at, how, outage=outage, method=method)
    try:
        value = flows.call("sync", N, run_id, _store(place, via))
        ending = "VALUE" if value == flows.expected(N) else "WRONG"
    except durable.StorageError:
        ending = "StorageError"
    except Exception as e:  # anything else is a violation, named
        ending = type(e).__name__
    hit = list(faults.hit)
    faults.fail(0, "")
    outcome.endings[f"{method} {ending}" if hit else f"no fault (past the run's {method}s)"] += 1
    if ending not in ("VALUE", "StorageError"):
        outcome.violation(trial, f"the run ended {ending} ({hit[:1]})")
    store = _store(place, None)
    done = recorded(store, "sync", run_id, N)
    first = _mine(place)
    try:
        again = flows.call("sync", N, run_id, store)
    except Exception as e:
        outcome.violation(trial, f"the resume raised {type(e).__name__}: {e}")
        return
    if again != flows.expected(N):
        outcome.violation(trial, "the resume returned a wrong value")
    records = store.load_records(flows.NAMES["sync"], run_id)
    if sorted(records) != [f"steps/{i:08d}" for i in range(N)]:
        outcome.violation(trial, f"records read back: {sorted(records)}")
    check_counts(outcome, trial, done, first, _mine(place) - first, N)


def _mine(place: Place) -> Counter[int]:
    import os

    return executions(place.log, "work").get(os.getpid(), Counter()).copy()
