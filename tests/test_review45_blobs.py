"""A run recorded on an object store by durable between incarnation tokens
(9f0127f) and hunt46 has a token (its records in `inc-<token>/`) but its
blobs at the run's prefix, `w/r/blobs/<sha256>`, and a format-1 manifest.
Resumed by durable since hunt46, which looks for a run's blobs in its
incarnation's folder and counts blobs at the prefix as another
incarnation's leftovers, the run failed "blob missing" on a record nothing
was wrong with, and its holder deleted the blob: the run was lost. Its
blobs are read where they are, and a blob at the prefix is no leftover."""

from __future__ import annotations

import pytest

import durable
from durable._storage import manifest as manifests
from durable._storage import recordlog, segments
from durable._storage.keys import blob_name, is_foreign, run_prefix

ran: list[str] = []
failing = [True]
BIG = b"x" * 4096  # over the store's blob threshold below: stored as a blob


@durable.step(name="big")
def big() -> bytes:
    ran.append("big")
    return BIG


@durable.step(name="last")
def last() -> int:
    ran.append("last")
    if failing[0]:
        raise RuntimeError("not yet")
    return 1


@durable.workflow(name="w", run_id="r")
def flow() -> int:
    return len(big()) + last()


def _at_the_prefix(store: durable.Store, workflow: str, run_id: str, digest: str) -> str:
    return run_prefix(workflow, run_id) + blob_name(digest)  # the layout before hunt46


def test_a_run_recorded_with_its_blobs_at_the_prefix_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    def opened() -> durable.Store:
        return durable.open_store("memory://review45-blobs", blob_threshold=1024)

    with monkeypatch.context() as before:  # durable between tokens and hunt46
        before.setattr(recordlog, "blob_key", _at_the_prefix)
        before.setattr(manifests, "MANIFEST_FORMAT", manifests.FORMAT_WITHOUT_TOKEN)
        before.setattr(segments, "is_foreign", lambda n, w: not n.startswith("blobs/") and is_foreign(n, w))
        with pytest.raises(RuntimeError, match="not yet"):
            flow.with_options(store=opened()).run()
    blobs = [k for k in opened().list("w/r/") if "/blobs/" in k]
    assert len(blobs) == 1 and blobs[0].startswith("w/r/blobs/"), blobs
    ran.clear()
    failing[0] = False
    run = flow.with_options(store=opened()).resume("r")  # was: CorruptRecordError blob missing
    assert (run.value, ran) == (len(BIG) + 1, ["last"])
    assert [k for k in opened().list("w/r/") if "/blobs/" in k] == blobs  # kept, not a leftover
