"""What the fast cache hit still checks. A large value's blob is checked by
the sums of its chunks that its (checked) entry records: CRC32 in an
unsigned store, SHA-256 under a signed entry (more in
`test_cache_chunks.py`, with the entries of older formats); an entry
already checked in this process is taken again only when its bytes and the
signing key are the same as when it was checked. Damage anywhere is a miss:
the step runs again and its entry or blob is stored again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage import cacheblob, cachescan, cachestore, codec
from durable._storage.records import StepRecord, seal, unseal
from tests.conftest import Place, only_cache_entry

CALLS: Counter[str] = Counter()
ITEMS = 10 * 1000 * 1000 // 8  # float64s in 10 MB


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


def _array_flow(store: durable.Store, name: str) -> durable.Workflow[[int], Any]:
    np = pytest.importorskip("numpy")

    @durable.step(cache=True, name="array")
    def array(seed: int) -> Any:
        CALLS["array"] += 1
        return np.random.default_rng(seed).random(ITEMS)

    @durable.workflow(store=store, name=name)
    def flow(seed: int) -> Any:
        return array(seed)

    return flow


def _flip_middle(store: durable.Store, key: str) -> bytes:
    """Flip one bit of the object's middle byte (its size is kept); the
    bytes it had before."""
    raw = store.get(key)
    assert raw is not None
    middle = len(raw) // 2
    store.put(key, raw[:middle] + bytes([raw[middle] ^ 0x10]) + raw[middle + 1 :])
    return raw


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_flipped_byte_in_a_large_cached_array_is_refused(place: Place, signed: bool) -> None:
    np = pytest.importorskip("numpy")
    store = place.open(signing_key=b"k" * 32 if signed else None)
    expected = np.random.default_rng(7).random(ITEMS)
    assert np.array_equal(_array_flow(store, "first")(7), expected)
    assert np.array_equal(_array_flow(store, "second")(7), expected)  # a hit
    assert CALLS["array"] == 1
    [entry] = cachescan.all_entries(store)
    # Which check guards the blob: a CRC32 per chunk unsigned, a SHA-256 per
    # chunk under a signed entry.
    sums = entry.record.extra[cacheblob.SUMS]
    assert set(sums) == {"chunk", "sha256" if signed else "crc32"}
    assert len(sums["sha256" if signed else "crc32"]) == 2  # 10 MB: two chunks
    [blob] = store.list(cachestore.BLOBS)
    intact = _flip_middle(store, blob)

    again = _array_flow(store, "third")(7)
    assert np.array_equal(again, expected)  # never the damaged bytes
    assert CALLS["array"] == 2
    assert store.get(blob) == intact  # stored again under its address
    assert np.array_equal(_array_flow(store, "fourth")(7), expected)
    assert CALLS["array"] == 2  # a hit again


@durable.step(cache=True, name="small")
def small(n: int) -> dict[str, int]:
    CALLS["small"] += 1
    return {"n": n, "calls": CALLS["small"]}


def test_a_damaged_entry_is_refused_after_a_hit_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("DURABLE_SIGNING_KEY", raising=False)
    assert small(1) == small(1) == {"n": 1, "calls": 1}  # computed, then a hit
    store = durable.open_store(tmp_path / "store")
    _flip_middle(store, only_cache_entry(store))
    assert small(1) == {"n": 1, "calls": 2}  # the damaged entry is a miss
    assert small(1) == {"n": 1, "calls": 2}  # and was stored again
    assert CALLS["small"] == 2


def test_an_entry_rewritten_after_a_hit_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's entry under the same key (after a `cache clear`,
    say) is the one served, not the one this process checked before."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("DURABLE_SIGNING_KEY", raising=False)
    assert small(2) == small(2) == {"n": 2, "calls": 1}
    store = durable.open_store(tmp_path / "store")
    key = only_cache_entry(store)
    raw = store.get(key)
    assert raw is not None
    record = StepRecord.from_bytes(unseal(raw, None, run_id="", position=None, name=key))
    record.value = codec.pack({"n": 2, "calls": 99})
    store.put(key, seal(record.to_bytes(), None))
    assert small(2) == {"n": 2, "calls": 99}
    assert CALLS["small"] == 1


def test_a_signed_entry_is_checked_again_under_another_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry checked with one signing key is not taken on trust once the
    store is opened with another (or without one)."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("DURABLE_SIGNING_KEY", "first key")
    assert small(3) == small(3) == {"n": 3, "calls": 1}
    monkeypatch.setenv("DURABLE_SIGNING_KEY", "second key")
    with pytest.raises(durable.IntegrityError, match="signature does not match") as caught:
        small(3)
    # Named as what it is, with the way out as the last sentence.
    text = str(caught.value)
    assert text.startswith("cache entry ") and "run '" not in text, text
    assert text.endswith(". Remove it with `durable cache clear`."), text
    monkeypatch.delenv("DURABLE_SIGNING_KEY")
    with pytest.raises(durable.IntegrityError, match="no signing key"):
        small(3)
    monkeypatch.setenv("DURABLE_SIGNING_KEY", "first key")
    assert small(3) == {"n": 3, "calls": 1}
    assert CALLS["small"] == 1


def test_an_array_is_read_without_a_copy_and_is_the_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On local disk a cached array is used where it was read (aligned for
    its type, writable); each hit reads its own, so a caller changing it
    changes no other hit's array."""
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))

    @durable.step(cache=True, name="arrays")
    def arrays(n: int) -> dict[str, Any]:
        CALLS["arrays"] += 1
        return {"c": np.arange(n, dtype=np.float64), "f": np.ones((3, n), order="F")}

    first = arrays(200_000)
    [entry] = cachescan.all_entries(durable.open_store(tmp_path / "store"))
    assert entry.record.encoding == codec.PICKLE_OOB and entry.record.blob is not None
    a, b = arrays(200_000), arrays(200_000)
    assert CALLS["arrays"] == 1
    for name in ("c", "f"):
        assert np.array_equal(a[name], first[name])
        assert a[name].flags.writeable and a[name].ctypes.data % 64 == 0
        assert not np.shares_memory(a[name], b[name])
    a["c"][0] = -1.0
    assert b["c"][0] == 0.0 and arrays(200_000)["c"][0] == 0.0


def test_out_of_band_buffers_obey_allow_pickle_and_copy_read_only_data() -> None:
    np = pytest.importorskip("numpy")
    value = {"a": np.arange(1000, dtype=np.int32)}
    tag, data = codec.encode_value(value, out_of_band=True)
    assert tag == codec.PICKLE_OOB
    with pytest.raises(TypeError, match="allow_pickle=False"):
        codec.encode_value(value, allow_pickle=False, out_of_band=True)
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        codec.decode_value(tag, data, allow_pickle=False, key="k")
    back = codec.decode_value(tag, data)  # bytes: the buffers are copied
    assert np.array_equal(back["a"], value["a"]) and back["a"].flags.writeable
    own = bytearray(data)  # writable memory of the caller's: used where it lies
    shared = codec.decode_value(tag, memoryview(own))
    shared["a"][0] = 7
    assert codec.decode_value(tag, memoryview(own))["a"][0] == 7
