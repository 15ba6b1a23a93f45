"""Errors name the real fault (issue 11, item 7): a flipped flag byte is
damage, a damaged manifest can be restarted, a vanished bucket and a full or
size-limited disk say so (and only network faults mention the network),
deep nesting is a clear error, a completed run whose records were lost says
so, and gc sweeps a crashed writer's temp files."""

from __future__ import annotations

import os
import resource
import signal
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import pack_manifest, read_manifest
from tests.conftest import Place, rewrite_record


def counted(store: durable.Store, counts: Counter[str]) -> Any:
    @durable.step(name="work")
    def work(i: int) -> int:
        counts[f"work{i}"] += 1
        return i * 10

    @durable.workflow(name="errs", store=store, run_id="r")
    def flow(stop: int | None = None) -> list[int]:
        out = []
        for i in range(4):
            if i == stop:
                raise RuntimeError(f"stopped before step {i}")
            out.append(work(i))
        return out

    return flow


def manifest_key(store: durable.Store) -> str:
    return store.manifest_keys(store.list("errs/r/"))["errs", "r"]


@pytest.mark.parametrize("damage", ["bit flip", "foreign key"])
def test_restart_discards_a_run_whose_manifest_is_damaged(place: Place, damage: str) -> None:
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        counted(place.open(), counts).run(stop=2)
    store = place.open()
    key = manifest_key(store)
    raw = store.get(key)
    assert raw is not None
    if damage == "bit flip":
        bad = raw[:60] + bytes([raw[60] ^ 4]) + raw[61:]
    else:  # valid, but signed with a key this store does not have
        manifest = read_manifest(store, "errs", "r")
        assert manifest is not None
        bad = pack_manifest(manifest, b"other key")
    store.put(key, bad)
    expected = durable.CorruptRecordError if damage == "bit flip" else durable.IntegrityError
    with pytest.raises(expected) as err:
        counted(place.open(), counts).run()
    if damage == "bit flip":
        assert "restart=True" in str(err.value)  # the advice given...
    run = counted(place.open(), counts).with_options(restart=True).run()  # ...works
    assert run.value == [0, 10, 20, 30] and run.steps_replayed == 0
    assert counts == {"work0": 2, "work1": 2, "work2": 1, "work3": 1}
    assert counted(place.open(), counts).run().steps_executed == 0  # and it is whole again


def test_a_vanished_bucket_is_a_storage_error(s3_url: str) -> None:
    import s3fs

    counts: Counter[str] = Counter()
    store = durable.open_store(s3_url)
    with pytest.raises(RuntimeError):
        counted(store, counts).run(stop=2)
    bucket = s3_url.split("://", 1)[1].split("/", 1)[0]
    s3fs.S3FileSystem(skip_instance_cache=True).rm(bucket, recursive=True)
    for call in (
        lambda: counted(store, counts).run(),
        lambda: store.put("errs/r/x", b"1"),
        lambda: store.get("errs/r/x"),
        lambda: store.get_many(["errs/r/x", "errs/r/y"]),
    ):
        with pytest.raises(durable.StorageError) as err:
            call()
        assert "bucket does not exist" in str(err.value)
        assert "network" not in str(err.value)
    assert counts == {"work0": 1, "work1": 1}


def test_an_unreachable_endpoint_mentions_the_network(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = durable.open_store(
        "s3://bucket/prefix",
        endpoint_url=f"http://127.0.0.1:{port}",
        key="k",
        secret="s",
        config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2},
        skip_instance_cache=True,
    )
    with pytest.raises(durable.StorageError) as err:
        store.get("w/r/run")
    assert "Check the URL, credentials and network" in str(err.value)


def test_a_record_write_that_fails_is_the_error_the_user_sees(tmp_path: Path) -> None:
    # A file size limit below everything the store writes: the record's
    # append fails (EFBIG), and so does the manifest write that would mark
    # the run failed. The user must see the first, not the second.
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s")
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    @durable.step(name="limit")
    def limit() -> str:
        counts["limit"] += 1
        if counts["limit"] == 1:
            resource.setrlimit(resource.RLIMIT_FSIZE, (64, old[1]))
        return "x" * 1000

    @durable.workflow(name="efbig", store=store, run_id="r")
    def flow() -> str:
        counts["body"] += 1
        return limit()

    try:
        with pytest.raises(durable.StorageError) as err:
            flow()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)
    text = str(err.value)
    assert "appending to efbig/r" in text and "File too large" in text
    assert "ulimit -f" in text and "network" not in text
    if sys.version_info >= (3, 11):
        assert "status (failed) was not recorded" in " ".join(err.value.__notes__)
    assert flow() == "x" * 1000  # the limit gone, the run resumes
    assert counts == {"body": 2, "limit": 2}


def test_arguments_and_values_nested_too_deep_are_clear_errors(store: durable.Store) -> None:
    deep: list[Any] = []
    for _ in range(sys.getrecursionlimit() + 100):
        deep = [deep]

    @durable.workflow(name="deep", store=store)
    def takes(x: Any) -> int:
        return 1

    @durable.step(name="gives")
    def gives() -> Any:
        return deep

    @durable.workflow(name="deep2", store=store, run_id="d")
    def returns() -> Any:
        return gives()

    with pytest.raises(durable.ConfigurationError, match="nested deeper than"):
        takes(deep)
    with pytest.raises(durable.SerializationError, match="nested deeper"):
        returns()


def test_history_of_a_completed_run_says_when_records_were_lost(place: Place) -> None:
    counts: Counter[str] = Counter()
    store = place.open()
    counted(store, counts).run()
    if place.kind == "local":
        log = Path(place.url) / "errs" / "r" / "records.log"
        data = log.read_bytes()
        last = data.rindex(b"steps/00000003") - 16  # the head of the last entry
        log.write_bytes(data[:last])
    else:  # the record is gone from the segment holding it
        rewrite_record(store, ("errs", "r"), "steps/00000003", None, None)
    with pytest.raises(durable.CorruptRecordError, match="4 finished operations but only 3"):
        counted(place.open(), counts).history("r")


def test_gc_sweeps_temp_files_a_crashed_writer_left(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    counted(store, Counter()).run()
    folder = tmp_path / "s" / "errs" / "r"
    stale, fresh = folder / ".tmp-stale", folder / ".tmp-fresh"
    stale.write_bytes(b"half a manifest")
    fresh.write_bytes(b"being written now")
    hour_ago = time.time() - 3700
    os.utime(stale, (hour_ago, hour_ago))
    assert durable.gc(store, status="failed") == []
    assert not stale.exists() and fresh.exists()
    assert durable.gc(store, status="failed", dry_run=True) == []
