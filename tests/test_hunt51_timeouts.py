"""A PUT that times out (the client's read timeout passes without an
answer) is sent again by botocore. "timeout-after": S3 stored the first
one, and the retry of a create-only write finds its own object (412);
"timeout-before": the retry is stored, the first one arrives after it and
is refused. Either way a record or a segment (a manifest alike) is written once,
the run goes on, each step executed once, and a resume replays them all."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

import durable
from durable._storage import segmenter

from . import s3proxy

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

N = 3
executed: Counter[int] = Counter()


@durable.step(name="work")
def work(i: int) -> int:
    executed[i] += 1
    return i + 100


@durable.workflow(name="timed", run_id="r")
def flow(n: int) -> list[int]:
    return [work(i) for i in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "match"),
    [("timeout-after", "/steps/"), ("timeout-before", "/steps/"), ("timeout-after", "/segments/")],
)  # fmt: skip
def test_a_put_that_timed_out_is_written_once(
    proxy: tuple[str, s3proxy.Faults], monkeypatch: pytest.MonkeyPatch, how: str, match: str
) -> None:
    import s3fs

    endpoint, faults = proxy
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 2)  # a segment after the second record
    options = {
        "endpoint_url": endpoint, "key": "testing", "secret": "testing",
        "config_kwargs": {"read_timeout": 1},
    }  # fmt: skip
    bucket = f"durable-{uuid.uuid4().hex[:16]}"
    s3fs.S3FileSystem(**options).mkdir(bucket)
    url = f"s3://{bucket}/p"
    executed.clear()
    faults.fail(1, how, match=match)
    assert flow.with_options(store=durable.open_store(url, **options))(N) == [100, 101, 102]
    assert faults.retried.is_set() and len(faults.hit) == 1, faults.hit
    assert executed == {0: 1, 1: 1, 2: 1}
    again = durable.open_store(url, skip_instance_cache=True, **options)
    assert sorted(again.load_records("timed", "r")) == [f"steps/{i:08d}" for i in range(N)]
    assert flow.with_options(store=again)(N) == [100, 101, 102]
    assert executed == {0: 1, 1: 1, 2: 1}
