"""How a cache hit reads its value: a large value's blob is verified (by
the sums of its chunks that its entry records: CRC32, or SHA-256 in
a signed store), and a damaged, truncated or missing blob is only a miss: the step runs once more and its blob is replaced.
Plain calls find their store by the environment as it is now."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._storage import cachestore
from tests.conftest import Place

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


@durable.step(cache=True)
def big(n: int) -> bytes:
    CALLS["big"] += 1
    return bytes(range(256)) * n


def flow_on(store: durable.Store, name: str) -> durable.Workflow[[int], int]:
    @durable.workflow(store=store, name=name)
    def flow(n: int) -> int:
        return sum(big(n))

    return flow


def _flip(store: durable.Store, key: str, raw: bytes) -> None:
    middle = len(raw) // 2
    store.put(key, raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1 :])


def _truncate(store: durable.Store, key: str, raw: bytes) -> None:
    store.put(key, raw[: len(raw) // 2])


def _delete(store: durable.Store, key: str, raw: bytes) -> None:
    store.delete([key])


DAMAGE = {"bit flipped": _flip, "truncated": _truncate, "deleted": _delete}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_blob_is_a_miss_and_is_replaced(place: Place, damage: str) -> None:
    store = place.open(blob_threshold=64)
    expected = sum(bytes(range(256))) * 8
    assert flow_on(store, "first")(8) == expected
    [key] = store.list(cachestore.BLOBS)
    raw = store.get(key)
    assert raw is not None
    DAMAGE[damage](store, key, raw)
    assert flow_on(store, "second")(8) == expected  # never the damaged bytes
    assert CALLS["big"] == 2
    assert store.get(key) == raw  # the same content, stored again under its address
    assert flow_on(store, "third")(8) == expected
    assert CALLS["big"] == 2  # a hit again


def test_a_large_array_comes_back_equal_and_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))

    @durable.step(cache=True, name="array")
    def array(n: int) -> object:
        CALLS["array"] += 1
        return np.arange(n, dtype=np.float32).reshape(2, -1)

    first, again = array(2_000_000), array(2_000_000)
    assert CALLS["array"] == 1
    assert again.dtype == np.float32 and again.shape == (2, 1_000_000)
    assert np.array_equal(first, again)
    again[0, 0] = -1.0  # the caller owns the array it gets
    assert array(2_000_000)[0, 0] == 0.0
    assert CALLS["array"] == 1


def test_a_plain_call_obeys_allow_pickle_set_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store a plain call uses is found again when the environment
    changes: a pickled entry is refused once DURABLE_ALLOW_PICKLE=0."""
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("DURABLE_ALLOW_PICKLE", raising=False)

    @durable.step(cache=True, name="pairs")
    def pairs(n: int) -> tuple[int, int]:
        CALLS["pairs"] += 1
        return (n, n)

    assert pairs(1) == pairs(1) == (1, 1)
    monkeypatch.setenv("DURABLE_ALLOW_PICKLE", "0")
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        pairs(1)
    assert CALLS["pairs"] == 1


# ---------------------------------------------------------------- kill -9 while storing

CRASH = """
import sys
import durable
from durable._storage import cachestore

LOG, HOLD = sys.argv[1], sys.argv[2]
write_entry = cachestore.write_entry


def hold(point):
    if point == HOLD:
        print("HELD", flush=True)
        sys.stdin.readline()  # the parent kills us here


def paused(store, key, record):
    hold("blob-stored")  # the blob is written, the entry is not
    made = write_entry(store, key, record)
    hold("entry-stored")  # the entry is written, the run's record is not
    return made


cachestore.write_entry = paused


@durable.step(cache=True)
def big(n: int) -> bytes:
    with open(LOG, "a") as f:
        f.write("x")
    return bytes(range(256)) * n


@durable.workflow(run_id="crash")
def flow(n: int) -> int:
    return sum(big(n))


print("VALUE", flow(4096), flush=True)
"""


def _child(script: Path, log: Path, hold: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(log), hold],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("point", ["blob-stored", "entry-stored"])
def test_kill_9_while_storing_a_cached_value(
    tmp_path: Path, child_env: dict[str, str], point: str
) -> None:
    """A run killed between storing the blob and the entry, or between the
    entry and its own record, resumes to the right value; the step ran
    again only if its entry was not there yet, and the store holds one
    entry and one blob."""
    script, log = tmp_path / "flow.py", tmp_path / "log"
    script.write_text(CRASH)
    child = _child(script, log, point, child_env)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "HELD"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    resumed = _child(script, log, "-", child_env)
    out, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, out
    assert out.strip() == f"VALUE {sum(bytes(range(256))) * 4096}"
    assert log.read_text() == ("xx" if point == "blob-stored" else "x")
    store = durable.open_store(tmp_path / "store")
    assert len(store.list(cachestore.ENTRIES)) == len(store.list(cachestore.BLOBS)) == 1


@durable.step(cache=True)
def small(n: int) -> dict[str, int]:
    CALLS["small"] += 1
    return {"n": n}


def test_a_plain_hit_is_answered_without_driving_a_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain call's hit returns the entry's value at once; only a miss
    drives the body's plan (counted: one plan per miss, none per hit), and
    a call that does not bind still fails before anything runs."""
    from durable._core import plan

    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    drives: list[str] = []
    code = plan.drive_sync.__code__

    def count(frame: object, event: str, arg: object) -> None:
        if event == "call" and getattr(frame, "f_code", None) is code:
            drives.append(event)

    hits = durable.cache_info(small).hits  # other tests of this process called it too
    sys.setprofile(count)
    try:
        values = [small(1), small(1), small(2), small(1), small(2)]
    finally:
        sys.setprofile(None)
    assert values == [{"n": 1}, {"n": 1}, {"n": 2}, {"n": 1}, {"n": 2}]
    assert (CALLS["small"], len(drives)) == (2, 2)
    assert durable.cache_info(small).hits - hits == 3
    with pytest.raises(TypeError, match="cannot be called with these arguments"):
        small(1, 2)
    assert CALLS["small"] == 2


@durable.step(cache=True)
def stamp(n: int) -> list[int]:
    CALLS["stamp"] += 1
    return [n, os.getpid()]


_OTHER_PROCESS = """
import sys
import durable
from durable._storage import cachescan, cachestore
from tests.test_cache_read import stamp

store = durable.open_store(sys.argv[1])
cachestore.remove(store, [e.key for e in cachescan.scan_entries(store)[0]])
if sys.argv[2] == "recompute":
    print(stamp(1)[1])
"""


@pytest.mark.parametrize("then", ["cleared", "recompute"])
def test_a_plain_hit_serves_the_entry_on_disk_now_not_one_read_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """A hit remembers an entry it checked (and answers from that while the
    file is the one it read), so another process clearing the entry, or
    clearing it and storing another value, must be seen on the next call."""
    root = tmp_path / "store"
    monkeypatch.setenv("DURABLE_STORE", str(root))
    assert [stamp(1), stamp(1)] == [[1, os.getpid()]] * 2
    assert CALLS["stamp"] == 1
    other = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(root), then],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        capture_output=True, text=True, timeout=120, check=True,
    )
    if then == "cleared":
        assert stamp(1) == [1, os.getpid()]
        assert CALLS["stamp"] == 2  # computed again here
    else:
        assert stamp(1) == [1, int(other.stdout)]  # the other process's value
        assert CALLS["stamp"] == 1


@pytest.mark.parametrize("size", [0, 1, 7, 4096, (8 << 20) + 3])
def test_the_fast_crc_gives_zlibs_sums(size: int) -> None:
    """Chunk sums written by zlib's CRC32 (entries before ISA-L) are checked
    by ISA-L's and the other way round: they must be the same numbers."""
    import zlib

    from durable._storage.crc import crc32

    data = bytes((i * 7 + size) % 251 for i in range(min(size, 1 << 16))) * (
        size // (1 << 16) + 1
    )
    data = data[:size]
    assert crc32(memoryview(data)) == zlib.crc32(data)


def test_hits_counted_by_many_threads_at_once_lose_none() -> None:
    """cache_info's counters take no lock on a hit (`cacheuse`): each count
    is one C call, so threads counting together must still add up."""
    import threading

    from durable._storage.cacheuse import count_use, counts

    name = f"counted-{os.getpid()}-{id(object())}"

    def count() -> None:
        for i in range(5000):
            count_use((name, f"here.{name}"), i % 5 != 0)

    threads = [threading.Thread(target=count) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts(name) == (8 * 4000, 8 * 1000)
