"""Large values stay out of the manifest (issue 11, item 8): a workflow's
return value (and its arguments) over the blob threshold go to a blob, as a
step output does, and listing runs reads only each run's summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage import runs
from durable._storage.manifest import HEAD, read_manifest, write_manifest
from tests.conftest import Place


def flow(store: durable.Store, counts: Counter[str], run_id: str = "big") -> Any:
    @durable.step(name="part")
    def part(i: int, size: int) -> bytes:
        counts[f"part{i}"] += 1
        return bytes([65 + i]) * size

    @durable.workflow(name="large", store=store, run_id=run_id)
    def large(size: int, blob: bytes = b"") -> bytes:
        counts["body"] += 1
        return part(0, size) + part(1, size) + blob

    return large


def manifest_size(store: durable.Store, run_id: str) -> int:
    # The newest generation is the manifest (an older one may stand beside it).
    (key,) = store.manifest_keys(store.list(f"large/{run_id}/")).values()
    raw = store.get(key)
    assert raw is not None
    return len(raw)


def blobs(store: durable.Store, run_id: str) -> list[str]:
    return [k for k in store.list(f"large/{run_id}/") if "/blobs/" in k]


def test_a_large_result_goes_to_a_blob_and_comes_back_equal(place: Place) -> None:
    counts: Counter[str] = Counter()
    store = place.open(blob_threshold=4096)
    value = flow(store, counts)(20_000)
    assert value == b"A" * 20_000 + b"B" * 20_000
    # Both step outputs and the 40 kB result are blobs; the manifest is small.
    assert len(blobs(store, "big")) == 3
    assert manifest_size(store, "big") < 4096
    again = flow(place.open(blob_threshold=4096), counts).run(20_000)
    assert again.value == value and again.steps_executed == 0
    assert counts == {"body": 1, "part0": 1, "part1": 1}  # returned, not re-run
    # A damaged result blob is refused, never returned.
    manifest = read_manifest(store, "large", "big")
    assert manifest is not None and manifest.result is None and manifest.result_blob
    # (in the run's incarnation's folder on an object store, `keys.space`)
    [key] = [k for k in store.list("large/big/") if k.endswith(f"blobs/{manifest.result_blob}")]
    data = store.get(key)
    assert data is not None
    store.put(key, data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(durable.CorruptRecordError, match="does not match its digest"):
        flow(place.open(blob_threshold=4096), counts)(20_000)
    assert counts == {"body": 1, "part0": 1, "part1": 1}


def test_the_default_threshold_keeps_a_3_mb_result_out_of_the_manifest(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s")
    value = flow(store, counts)(1_500_000)
    assert len(value) == 3_000_000
    assert manifest_size(store, "big") < 4096
    assert flow(durable.open_store(tmp_path / "s"), counts)(1_500_000) == value
    assert counts == {"body": 1, "part0": 1, "part1": 1}


def test_large_arguments_go_to_a_blob_and_follow_resume_and_fork(place: Place) -> None:
    counts: Counter[str] = Counter()
    store = place.open(blob_threshold=4096)
    blob = b"z" * 50_000
    first = flow(store, counts, run_id="args").run(10, blob)
    assert first.value == b"A" * 10 + b"B" * 10 + blob
    assert manifest_size(store, "args") < 4096
    resumed = flow(place.open(blob_threshold=4096), counts).resume("args")
    assert resumed.value == first.value  # the recorded (blob) arguments were read back
    forked = flow(place.open(blob_threshold=4096), counts).fork("args", at=1, new_run_id="f")
    assert forked.value == first.value and forked.steps_replayed == 1
    assert counts == {"body": 2, "part0": 1, "part1": 2}


def test_listing_reads_only_each_runs_summary(place: Place) -> None:
    """Also with a summary longer than the first read (a long error)."""
    counts: Counter[str] = Counter()
    store = place.open()  # default threshold: a 900 kB argument stays inline
    for run_id in ("one", "two"):
        flow(store, counts, run_id=run_id)(1, b"q" * 900_000)
    assert manifest_size(store, "one") > 900_000
    # A summary longer than a listing's first read (here: a bulky `extra`).
    long = read_manifest(store, "large", "two")
    assert long is not None
    long.extra["note"] = "n" * (HEAD + 1000)
    write_manifest(store, long)
    reader = place.open(own_client=True)
    read: list[int] = []
    for method in ("get", "get_many", "get_heads"):
        real = getattr(reader, method)

        def counting(*args: Any, _real: Any = real) -> Any:
            got = _real(*args)
            values = got.values() if isinstance(got, dict) else [got]
            read.append(sum(len(v) for v in values if v is not None))
            return got

        setattr(reader, method, counting)
    infos = runs.list_runs(reader, "large")
    assert sorted(i.run_id for i in infos) == ["one", "two"]
    assert {i.status for i in infos} == {"completed"} and {i.steps for i in infos} == {2}
    # Two summaries (one read twice) and two lease probes, not 1.8 MB of manifests.
    assert sum(read) <= 4 * HEAD + 4096
