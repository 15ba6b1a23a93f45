"""A segment PUT on S3 that S3 stored but whose answers were all lost (a 500
after the write, or a connection reset, longer than the client retries: a
short outage): the holder saw a `StorageError` and kept the records as
single objects, to be moved at its next flush. That flush took the same
segment name, found it taken by bytes it no longer sends (its own write,
holding fewer records) and took itself for a stale holder: the run ended
with `LeaseLostError` ('another process wrote segment ...'), no other
process near it, and said that the step whose record it had just written
was not recorded. Each record must read back exactly once, none run twice."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import durable
from durable._storage import segmenter

from . import s3proxy

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

N = 5
executed: list[int] = []


@durable.step(name="work")
def work(i: int) -> int:
    executed.append(i)
    return i * i


@durable.workflow(name="segmented")
def flow(n: int) -> list[int]:
    return [work(i) for i in range(n)]


@pytest.fixture
def proxied(s3_endpoint: str) -> Iterator[tuple[dict[str, object], s3proxy.Faults]]:
    with s3proxy.serving(s3_endpoint) as (endpoint, faults):
        # One try a request: the outage outlasts the client's retries at once.
        options: dict[str, object] = {
            "endpoint_url": endpoint, "key": "testing", "secret": "testing",
            "config_kwargs": {"retries": {"max_attempts": 1}},
        }  # fmt: skip
        yield options, faults


@pytest.mark.slow
def test_a_segment_stored_with_its_answer_lost_is_the_holders_own(
    proxied: tuple[dict[str, object], s3proxy.Faults], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection reset once S3 has the segment (a 500 then does the same)."""
    import s3fs

    options, faults = proxied
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 2)  # a segment every 2 records
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)  # no backoff: the outage ends sooner
    bucket = f"durable-{uuid.uuid4().hex[:16]}"
    s3fs.S3FileSystem(**options).mkdir(bucket)
    url = f"s3://{bucket}/runs"
    # The first segment's PUT stored, its answers lost until the next PUT.
    faults.fail(1, "reset-after", match="/segments/", outage=True)
    del executed[:]
    value = flow.with_options(store=durable.open_store(url, **options), run_id="r")(N)
    # Its tries all failed; the outage ended at the next record's PUT.
    first = "/segments/0000000001-0000000001"
    assert faults.hit and all(h.endswith(first) for h in faults.hit), faults.hit
    assert value == [i * i for i in range(N)]
    assert executed == list(range(N))
    again = durable.open_store(url, skip_instance_cache=True, **options)
    records = again.load_records("segmented", "r")
    assert sorted(records) == [f"steps/{i:08d}" for i in range(N)]
    # The holder moved every record into its segments, that one included.
    assert [k for k in again.list("segmented/r/") if "/steps/" in k] == []
    del executed[:]
    assert flow.with_options(store=again, run_id="r")(N) == value
    assert executed == []
