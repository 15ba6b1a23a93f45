"""S3's batched delete (DeleteObjects) answers 200 and names, one by one,
the keys it did not delete: a policy without s3:DeleteObject (AccessDenied
for each), an InternalError or SlowDown for some. s3fs's `rm` drops those
errors, so durable took the objects for gone:
- the lease holder took the single objects a segment covers for deleted and
  merged its segments (a merge keeps no deletions, and the singles it
  counted gone still held the records a rerun had replaced): the next resume
  of the finished run found them disagreeing with the merge and refused it
  with `CorruptRecordError`;
- `restart=True` took the run for removed and failed with a `LeaseLostError`
  saying another process had written the manifest, warning that records
  left over "were removed": none was.
A delete that S3 reports failed now raises `StorageError` naming the cause;
the holder keeps the singles it covers, and merges only once they are gone."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

import durable

from . import s3proxy

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

executed: Counter[int] = Counter()


@durable.step(name="twice")
def twice(i: int) -> int:
    executed[i] += 1
    return 2 * i


@durable.workflow(name="denied", run_id="r")
def flow(shift: int = 0, stop: bool = True) -> list[int]:
    out = [twice(i + (shift if i >= 2 else 0)) for i in range(4)]
    if stop:
        durable.suspend("resumed later")
    return out


@pytest.fixture
def denied(proxy: tuple[str, s3proxy.Faults]) -> Iterator[tuple[str, dict[str, str]]]:
    """A bucket behind the proxy, whose every batched delete fails key by key."""
    import s3fs

    endpoint, faults = proxy
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    bucket = f"durable-{uuid.uuid4().hex[:16]}"
    s3fs.S3FileSystem(**options).mkdir(bucket)
    faults.deny("?delete", how="delete-errors")
    executed.clear()
    yield f"s3://{bucket}/p", options


def store(place: tuple[str, dict[str, str]]) -> durable.Store:
    url, options = place
    return durable.open_store(url, skip_instance_cache=True, **options)


@pytest.mark.slow
def test_a_rerun_whose_singles_were_not_deleted_resumes(denied: tuple[str, dict[str, str]]) -> None:
    with pytest.raises(durable.Suspended):
        flow.with_options(store=store(denied))()
    assert executed == {0: 1, 1: 1, 2: 1, 3: 1}
    with pytest.raises(durable.Suspended):
        flow.with_options(store=store(denied), on_change="rerun").resume("r", shift=10)
    assert executed == {0: 1, 1: 1, 2: 1, 3: 1, 12: 1, 13: 1}
    # Resumed: every step replayed, nothing refused or run again.
    resumed = flow.with_options(store=store(denied)).resume("r", shift=10, stop=False)
    assert resumed.value == [0, 2, 24, 26]
    assert executed == {0: 1, 1: 1, 2: 1, 3: 1, 12: 1, 13: 1}


@pytest.mark.slow
def test_a_restart_whose_deletes_failed_says_so(
    denied: tuple[str, dict[str, str]], proxy: tuple[str, s3proxy.Faults]
) -> None:
    with pytest.raises(durable.Suspended):
        flow.with_options(store=store(denied))()
    executed.clear()
    with pytest.raises(durable.StorageError) as err:
        flow.with_options(store=store(denied), restart=True)()
    assert "objects were not deleted" in str(err.value), err.value
    assert "AccessDenied" in str(err.value) and "s3:DeleteObject" in str(err.value)
    assert executed == {}
    proxy[1].deny("")  # the policy fixed: the restart removes the run and runs it afresh
    with pytest.raises(durable.Suspended):
        flow.with_options(store=store(denied), restart=True)()
    assert executed == {0: 1, 1: 1, 2: 1, 3: 1}



@pytest.mark.slow
def test_keys_s3_failed_to_delete_for_a_passing_reason_are_asked_again(
    denied: tuple[str, dict[str, str]], proxy: tuple[str, s3proxy.Faults]
) -> None:
    faults = proxy[1]
    faults.deny("")
    objects = store(denied)
    for k in ("w/r/a", "w/r/b"):
        objects.put(k, b"x")
    faults.fail(1, "delete-busy", method="DELETE")  # the first DeleteObjects: an InternalError a key
    objects.delete(["w/r/a", "w/r/b"])
    assert len(faults.hit) == 1 and faults.passed.is_set()
    assert objects.list("w/") == []
