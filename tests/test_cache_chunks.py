"""What the faster cache hit must not break: a large value's blob is checked
chunk by chunk against the sums its entry records (several threads read and
check at once), and any damaged chunk, a blob of another length, or sums
that do not fit make a miss; entries written before the sums are still read
(checked whole); a hit refreshes its entry's use time at most once a minute
per process; a plain call finds its store as the environment says now."""

from __future__ import annotations

import os
import threading
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import cacheblob, cachemarks, cachescan, cachestore
from durable._storage.records import StepRecord, seal, sealed_body, unseal
from durable.testing import FakeClock
from tests.conftest import Place, only_cache_entry

pytestmark = pytest.mark.s3_sample  # each case takes seconds on moto's S3
CALLS: Counter[str] = Counter()
CHUNK = 4096  # small chunks: a blob of a few KB has several
VALUE = bytes(range(256)) * 70  # 17,920 bytes: four whole chunks and a part


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    CALLS.clear()
    monkeypatch.setattr(cacheblob, "CHUNK", CHUNK)


def _flow(store: durable.Store, name: str) -> durable.Workflow[[int], bytes]:
    @durable.step(cache=True, name="blob")
    def blob(n: int) -> bytes:
        CALLS["blob"] += 1
        return bytes(range(256)) * n

    @durable.workflow(store=store, name=name)
    def flow(n: int) -> bytes:
        return blob(n)

    return flow


def _stored(store: durable.Store) -> tuple[str, bytes, int]:
    """The blob's key, its bytes and where its body starts."""
    assert _flow(store, "first")(70) == _flow(store, "second")(70) == VALUE
    assert CALLS["blob"] == 1
    [key] = store.list(cachestore.BLOBS)
    raw = store.get(key)
    assert raw is not None
    return key, raw, len(raw) - len(sealed_body(raw))


def _computed_again(store: durable.Store, key: str, intact: bytes) -> None:
    assert _flow(store, "after")(70) == VALUE  # never the damaged bytes
    assert CALLS["blob"] == 2
    assert store.get(key) == intact  # stored again under its address
    assert _flow(store, "again")(70) == VALUE
    assert CALLS["blob"] == 2  # a hit again


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize("where", [0, 2 * CHUNK + 17, len(VALUE) - 1], ids=["first", "middle", "last"])
def test_a_flipped_byte_in_any_chunk_is_a_miss(place: Place, signed: bool, where: int) -> None:
    store = place.open(blob_threshold=64, signing_key=b"k" * 32 if signed else None)
    key, raw, head = _stored(store)
    [entry] = cachescan.all_entries(store)
    sums = entry.record.extra[cacheblob.SUMS]
    assert sums["chunk"] == CHUNK and len(sums["sha256" if signed else "crc32"]) == 5
    at = head + where
    store.put(key, raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :])
    _computed_again(store, key, raw)


@pytest.mark.parametrize(
    "change",
    [lambda raw: raw + b"\0", lambda raw: raw[:-1], lambda raw: raw[: len(raw) - CHUNK]],
    ids=["a byte more", "a byte less", "a chunk less"],
)
def test_a_blob_of_another_length_is_a_miss(place: Place, change: Callable[[bytes], bytes]) -> None:
    store = place.open(blob_threshold=64)
    key, raw, _ = _stored(store)
    store.put(key, change(raw))
    _computed_again(store, key, raw)


Edit = Callable[[StepRecord, bytes], None]  # (the entry's record, its blob's body)


def _rewrite_entry(store: durable.Store, edit: Edit) -> None:
    """Rewrite the entry as another writer (or an older version) would."""
    [key] = store.list(cachestore.BLOBS)
    blob = store.get(key)
    assert blob is not None
    [entry] = cachescan.all_entries(store)
    raw = store.get(entry.key)
    assert raw is not None
    body = unseal(raw, store.signing_key, run_id="", position=None, name=entry.key)
    record = StepRecord.from_bytes(body)
    edit(record, bytes(sealed_body(blob)))
    store.put(entry.key, seal(record.to_bytes(), store.signing_key))


def _as_before_sums(with_crc: bool) -> Edit:
    def edit(record: StepRecord, body: bytes) -> None:
        del record.extra[cacheblob.SUMS]
        if with_crc:  # the format before: the CRC32 of the whole body
            record.extra[cachestore.CRC] = zlib.crc32(body)

    return edit


@pytest.mark.parametrize("with_crc", [True, False], ids=["whole CRC", "content address"])
def test_an_entry_of_the_previous_formats_is_still_read(place: Place, with_crc: bool) -> None:
    store = place.open(blob_threshold=64)
    key, raw, head = _stored(store)
    _rewrite_entry(store, _as_before_sums(with_crc))
    assert _flow(store, "old")(70) == VALUE  # a hit, checked the old way
    assert CALLS["blob"] == 1
    at = head + len(VALUE) // 2
    store.put(key, raw[:at] + bytes([raw[at] ^ 0x40]) + raw[at + 1 :])
    _computed_again(store, key, raw)


def _crc_sums(record: StepRecord, body: bytes) -> None:
    crcs = [zlib.crc32(body[i : i + CHUNK]) for i in range(0, len(body), CHUNK)]
    record.extra[cacheblob.SUMS] = {"chunk": CHUNK, "crc32": crcs}


def _other_chunk_size(record: StepRecord, body: bytes) -> None:
    record.extra[cacheblob.SUMS]["chunk"] = CHUNK * 2


def _sums_missing(record: StepRecord, body: bytes) -> None:
    sums = record.extra[cacheblob.SUMS]
    for algo in ("crc32", "sha256"):
        if algo in sums:
            sums[algo] = sums[algo][:-1]


@pytest.mark.parametrize(
    ("edit", "signed"),
    [(_crc_sums, True), (_other_chunk_size, False), (_sums_missing, False), (_sums_missing, True)],
    ids=["CRCs in a signed store", "another chunk size", "a sum missing", "a hash missing"],
)
def test_sums_that_do_not_fit_fall_back_to_the_content_address(
    place: Place, edit: Edit, signed: bool
) -> None:
    """Sums a store cannot rely on (CRCs where a signature must vouch for
    every byte, or sums of other chunks) are ignored: the blob is checked
    whole by its SHA-256 content address, and a damaged one is a miss."""
    store = place.open(blob_threshold=64, signing_key=b"k" * 32 if signed else None)
    key, raw, head = _stored(store)
    _rewrite_entry(store, edit)
    assert _flow(store, "odd-sums")(70) == VALUE
    assert CALLS["blob"] == 1
    store.put(key, raw[:head] + bytes([raw[head] ^ 0x02]) + raw[head + 1 :])
    _computed_again(store, key, raw)


def test_work_in_threads_stops_at_the_first_failure_and_raises_errors() -> None:
    seen: list[int] = []
    threads: set[int] = set()

    def record(i: int) -> bool:
        seen.append(i)
        threads.add(threading.get_ident())
        return True

    assert cacheblob.in_threads(50, record)
    assert sorted(seen) == list(range(50))  # each chunk once
    assert not cacheblob.in_threads(50, lambda i: i != 3)

    def fails(i: int) -> bool:
        if i == 7:
            raise OSError("disk gone")
        return True

    with pytest.raises(OSError, match="disk gone"):
        cacheblob.in_threads(20, fails)
    assert cacheblob.in_threads(0, fails)  # nothing to do


@durable.step(cache=True, name="used")
def used(n: int) -> int:
    CALLS["used"] += 1
    return n * 2


def test_a_hit_refreshes_the_use_time_at_most_once_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    store = durable.open_store(tmp_path / "store")
    start, hits = clock.now, durable.cache_info(used).hits
    assert used(1) == 2  # computed: its use time is its creation

    def use_time() -> float:
        entries = cachescan.all_entries(store)
        return cachemarks.last_used(store, entries)[only_cache_entry(store)]

    for later, expected in [(10, 0), (61, 61), (90, 61), (120, 61), (122, 122)]:
        clock.now = start + later
        assert used(1) == 2
        assert use_time() == start + expected
    assert CALLS["used"] == 1
    assert durable.cache_info(used).hits == hits + 5


def test_a_plain_call_finds_its_store_as_the_environment_says_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is found again on every call (by the raw environment, the
    working folder and `configure`), never one that no longer applies."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", "one")
    assert used(5) == used(5) == 10
    monkeypatch.setenv("DURABLE_STORE", "two")
    assert used(5) == 10
    assert CALLS["used"] == 2  # another store: computed there
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # "two" is another folder from here
    assert used(5) == 10
    assert CALLS["used"] == 3
    durable.configure(store=str(tmp_path / "one"))
    try:
        assert used(5) == 10  # the configured store wins: the first entry
        assert CALLS["used"] == 3
    finally:
        durable.configure(store=None)
    environ: dict[str, Any] = {**os.environ, "DURABLE_STORE": str(tmp_path / "three")}
    monkeypatch.setattr(os, "environ", environ)  # not os.environ's own type: read as it is
    assert used(5) == 10
    assert CALLS["used"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "one", "three", "two"]


def test_a_platform_without_preadv_reads_and_checks_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cacheblob, "_PREADV", False)
    store = durable.open_store(tmp_path / "store", blob_threshold=64)
    key, raw, head = _stored(store)  # a hit, read by pread
    store.put(key, raw[: head + 5] + bytes([raw[head + 5] ^ 0x08]) + raw[head + 6 :])
    _computed_again(store, key, raw)
