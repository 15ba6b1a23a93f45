"""A create-only PUT whose answer is lost (a 500 after S3 stored it, a
connection reset) is sent again by botocore, and S3 answers the second one
412: the object exists. It is this writer's own (DESIGN §4: compare): a
lease taken that way is held, a manifest written that way is written, and
no record counts twice. Every PUT of a run is failed in turn."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import durable

from . import s3proxy

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

N = 2  # two records: every PUT of a run is failed in turn, each costing a retry
executed: list[int] = []


@durable.step(name="work")
def work(i: int) -> int:
    executed.append(i)
    return i * i


@durable.workflow(name="flow")
def flow(n: int) -> list[int]:
    return [work(i) for i in range(n)]


@pytest.fixture
def proxied(s3_endpoint: str) -> Iterator[tuple[dict[str, str], s3proxy.Faults]]:
    with s3proxy.serving(s3_endpoint) as (endpoint, faults):
        yield {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}, faults


@pytest.mark.slow
@pytest.mark.parametrize("how", ["500-after", "reset-after", "500-before", "reset-mid"])
def test_a_create_sent_again_is_the_writers_own(
    proxied: tuple[dict[str, str], s3proxy.Faults], how: str
) -> None:
    import s3fs

    options, faults = proxied
    bucket = f"durable-{uuid.uuid4().hex[:16]}"
    s3fs.S3FileSystem(**options).mkdir(bucket)
    failed: list[str] = []
    # Another process's view: a client of its own, with no listing cache,
    # made once (a new client per run cost a third of the test's time).
    other = {**options, "use_listings_cache": False}
    # A failure before the object is written (or mid-request) only has to
    # fail closed: the first PUTs (lease, manifest, a record) show it, each
    # costing s3fs's retries and their backoff; an answer lost after the
    # write is tried at every PUT of the run.
    for at in range(1, 100 if how.endswith("after") else 4):
        url = f"s3://{bucket}/p{at}"
        faults.fail(at, how)
        del executed[:]
        value = flow.with_options(store=durable.open_store(url, **options), run_id="r")(N)
        hit = faults.hit
        faults.fail(0, "")
        if not hit:
            break
        failed += hit
        assert value == [i * i for i in range(N)], hit
        assert executed == list(range(N)), hit
        del executed[:]
        again = durable.open_store(url, **other)
        assert flow.with_options(store=again, run_id="r")(N) == value
        assert executed == [], hit
    # The lease, the manifest and the records were each failed at least once.
    assert {k.split("/")[-2] for k in failed} >= {"lease", "run", "steps"}, failed
