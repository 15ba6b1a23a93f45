"""A store that never deletes (a bucket policy without s3:DeleteObject):
- a run removed there (`Workflow.delete`, `durable rm`, `gc`, a discarded child)
  failed with StorageError and left its lease unreleased: `release(delete=True)`
  deleted the lease's generations, and when that failed too it wrote nothing,
  so every other process (another host's, here) was turned away until the
  lease expired and was watched (about a minute). It now gives the lease up
  with a released marker, as a release does, and writes nothing more;
- the holder moved its records into segments at every flush and could delete
  none of the single objects they hold: the run's objects grew and each
  resume read them all, and nothing said why. It now warns, once per run."""

from __future__ import annotations

import socket
import uuid
import warnings
from collections import Counter
from collections.abc import Iterator

import pytest

import durable

from . import s3proxy

pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

executed: Counter[int] = Counter()


@durable.step(name="twice53")
def twice(i: int) -> int:
    executed[i] += 1
    return 2 * i


@durable.workflow(name="denied53", run_id="r")
def flow(stop: bool = True) -> list[int]:
    out = [twice(i) for i in range(3)]
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


def test_a_removal_whose_deletes_failed_leaves_the_run_free_at_once(
    denied: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(durable.Suspended), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        flow.with_options(store=store(denied))()
    assert executed == {0: 1, 1: 1, 2: 1}
    told = [str(w.message) for w in said if "s3:DeleteObject" in str(w.message)]
    assert len(told) == 1, told  # the singles its segment holds are kept: said once
    assert "denied53" in told[0] and "'r'" in told[0], told
    removing = store(denied)
    held = removing.acquire("denied53", "r", 30.0)
    with pytest.raises(durable.StorageError, match="objects were not deleted"):
        removing.delete_held_run("denied53", "r", held)
    with pytest.raises(durable.LeaseLostError):
        held.check()  # given up: it writes nothing more
    # Another machine resumes at once (before: RunLockedError, the lease live for 30 s more).
    monkeypatch.setattr(socket, "gethostname", lambda: "elsewhere53")
    resumed = flow.with_options(store=store(denied), wait=0).resume("r", stop=False)
    assert resumed.value == [0, 2, 4]
    assert executed == {0: 1, 1: 1, 2: 1}  # nothing was deleted: every step replayed
