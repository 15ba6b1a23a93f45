"""A run with more keys than one page of an S3 listing: a resume must see
every record, on every page. S3 (and moto's server) pages at 1,000 keys;
moto's server is told to page at 4 here (MOTO_S3_DEFAULT_MAX_KEYS, read at
each request), so that a run of 14 steps is listed in several pages, as a
run of 3,500 would be on S3, and `segments._settled`, which lists the
segments again after a listing of more than one page, takes its page size
alike. The run is recorded on memory:// and its objects copied to S3 as it
runs, as a holder killed before any segment would leave them; each resume
on S3 replays every step."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

import durable
from durable._storage import segmenter, segments

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

N = 14
PAGE = 4
executed: Counter[int] = Counter()
copy: dict[str, Any] = {}


@durable.step(name="work")
def work(i: int) -> int:
    executed[i] += 1
    return i * 3


def copied() -> None:
    """Every object of the memory store but its lease, onto S3, once."""
    if copy.pop("to", None) is None:
        return
    import fsspec
    import s3fs

    mem, root, target = fsspec.filesystem("memory"), copy.pop("root"), copy.pop("bucket")
    paths = [p for p in mem.find(root) if "/lease/" not in p]
    rel = {p: p.split(root.strip("/"), 1)[1].lstrip("/") for p in paths}
    s3fs.S3FileSystem().pipe({f"{target}/{rel[p]}": mem.cat_file(p) for p in paths})


@durable.workflow(name="paged", run_id="r")
def flow(n: int) -> int:
    total = sum(work(i) for i in range(n))
    copied()
    return total


@pytest.mark.slow
def test_a_resume_reads_every_page_of_a_long_listing(
    s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 10 * N)  # every record a single object
    monkeypatch.setattr(segmenter, "SEGMENT_INTERVAL", 1e9)
    root = f"/hunt51-{uuid.uuid4().hex}"
    copy.update(to=True, root=root, bucket=s3_url[len("s3://") :])
    assert flow.with_options(store=durable.open_store(f"memory://{root}"))(N) == 3 * sum(range(N))
    assert executed == dict.fromkeys(range(N), 1)
    monkeypatch.setenv("MOTO_S3_DEFAULT_MAX_KEYS", str(PAGE))
    monkeypatch.setattr(segments, "_PAGE", PAGE)
    store = durable.open_store(s3_url, skip_instance_cache=True)
    bucket, prefix = s3_url[len("s3://") :].split("/", 1)
    page = store.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix)  # type: ignore[attr-defined]
    assert (page["KeyCount"], page["IsTruncated"]) == (PAGE, True)
    assert len([k for k in store.list("") if "/steps/" in k]) == N  # read in pages
    executed.clear()
    assert flow.with_options(store=store)(N) == 3 * sum(range(N))
    assert executed == {}
    # Once more, from the segment the holder moved them into at its release.
    again = durable.open_store(s3_url, skip_instance_cache=True)
    assert [k for k in again.list("paged/r/") if "/inc-" in k and "/segments/" not in k] == []
    assert flow.with_options(store=again)(N) == 3 * sum(range(N))
    assert executed == {}
