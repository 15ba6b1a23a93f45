"""S3 answering 503 SlowDown to every request for a run's lease, for longer
than one renewal interval but shorter than the time the holder trusts its
last claim: the rule (`ObjectLease._renewed`) is that a renewal the store
failed is tried again every tenth of the lease while the last claim is
younger than two thirds of it, and only past that is the lease taken for
lost (the holder then writes nothing more; another process takes over only
once the lease expired: tests/test_lease_renewal_faults.py). So this holder
keeps the run, each step executed once, and no `LeaseLostError`."""

from __future__ import annotations

import time
from collections import Counter

import pytest

import durable
from durable._storage import objectlease

from . import s3proxy

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

OUTAGE = 5  # lease requests answered 503: five failed renewals, 1.5 s (a renewal a second)


@pytest.mark.slow
def test_a_slowdown_past_a_renewal_interval_keeps_the_lease(
    s3_url: str, proxy: tuple[str, s3proxy.Faults], monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    endpoint, faults = proxy
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)  # each renewal's first request fails it
    # Renewed every second, tried again every 0.3 s, trusted for 20 s.
    monkeypatch.setattr(objectlease, "RENEW_EVERY", 1 / 30)
    monkeypatch.setattr(objectlease, "RETRY_EVERY", 1 / 100)
    store = durable.open_store(
        s3_url, endpoint_url=endpoint, lease_ttl=30, skip_instance_cache=True,
        config_kwargs={"retries": {"total_max_attempts": 1}},
    )  # fmt: skip
    executed: Counter[int] = Counter()
    lasted: list[float] = []

    @durable.step(name="work")
    def work(i: int) -> int:
        executed[i] += 1
        if i == 1:  # goes on once a renewal after the outage went through
            start = time.monotonic()
            faults.deny("/lease/", how="503", times=OUTAGE)
            assert faults.outage_over.wait(60)
            lasted.append(time.monotonic() - start)
        return i * 10

    @durable.workflow(store=store, run_id="r", name="slowed")
    def flow() -> list[int]:
        return [work(i) for i in range(3)]

    assert flow() == [0, 10, 20]
    assert executed == {0: 1, 1: 1, 2: 1}
    assert lasted[0] > 30 * objectlease.RENEW_EVERY  # longer than one renewal interval
    assert flow() == [0, 10, 20]  # replayed
    assert executed == {0: 1, 1: 1, 2: 1}
