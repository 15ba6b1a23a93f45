"""The twenty-seventh round of the peers' own test cases (see
tests/test_peer_ports_twentyseventh.py): joblib's
joblib/test/test_memory_async.py, `async def` functions cached across
calls (`Memory.cache` of a coroutine function), as `async def` steps with
`cache=True`, called outside any workflow and inside runs. Where joblib
differs on purpose (`mmap_mode`, `call_and_shelve`, an ignored argument
the function changes), docs/caching.md's "Coming from joblib.Memory" says
so. Executions are counted by the step bodies."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.conftest import only_cache_entry


@pytest.fixture
def cachedir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "cache"))
    monkeypatch.delenv("DURABLE_SIGNING_KEY", raising=False)
    return tmp_path / "cache"


def test_joblib_memory_integration_async(cachedir: Path) -> None:
    """test_memory_integration_async: each argument computed once, then
    served (`check_identity_lazy_async`); the cache folder removed under
    it, the next call computes again and the one after is served."""
    accumulator: list[int] = []

    @durable.step(cache=True)
    async def f(n: int) -> int:
        await asyncio.sleep(0)
        accumulator.append(1)
        return n

    async def main() -> None:
        for i in range(3):
            for _ in range(2):
                assert await f(i) == i
                assert len(accumulator) == i + 1
        shutil.rmtree(cachedir)
        assert await f(1) == 1 and len(accumulator) == 4
        assert await f(1) == 1 and len(accumulator) == 4

    asyncio.run(main())
    info = durable.cache_info(f)
    assert (info.hits, info.misses, info.entries) == (4, 4, 1)


def test_joblib_no_memory_async(cachedir: Path) -> None:
    """test_no_memory_async: without a cache (`Memory(location=None)`, here
    a step without `cache=`) a coroutine called outside a workflow runs on
    every call, and nothing is written to the store."""
    accumulator: list[int] = []

    @durable.step
    async def ff(x: int) -> int:
        await asyncio.sleep(0)
        accumulator.append(1)
        return x

    async def main() -> None:
        for i in range(4):
            assert await ff(1) == 1
            assert len(accumulator) == i + 1

    asyncio.run(main())
    assert not cachedir.exists()


def test_joblib_numpy_result_async_damaged_entry_computes_again(cachedir: Path) -> None:
    """test_memory_numpy_check_mmap_mode_async, adapted: durable has no
    `mmap_mode` (a hit reads its own array, the caller's to change); the
    entry damaged on disk is a miss that computes again (joblib warns
    "Exception while loading results") and stores it again."""
    np = pytest.importorskip("numpy")
    ran: list[int] = []

    @durable.step(cache=True)
    async def twice(a: Any) -> Any:
        ran.append(1)
        return a * 2

    a = np.ones(3)

    async def main() -> None:
        b = await twice(a)
        c = await twice(a)
        assert b.tolist() == c.tolist() == [2.0] * 3 and len(ran) == 1
        c[:] = -1  # the caller's own copy
        assert (await twice(a)).tolist() == [2.0] * 3 and len(ran) == 1
        store = durable.open_store(str(cachedir))
        key = only_cache_entry(store)
        raw = store.get(key)
        assert raw is not None
        middle = len(raw) // 2
        store.put(key, raw[:middle] + bytes([raw[middle] ^ 0x10]) + raw[middle + 1 :])
        d = await twice(a)
        assert isinstance(d, np.ndarray) and d.tolist() == [2.0] * 3 and len(ran) == 2
        assert (await twice(a)).tolist() == [2.0] * 3 and len(ran) == 2

    asyncio.run(main())


def test_joblib_call_and_shelve_async_as_cache_info(cachedir: Path) -> None:
    """test_call_and_shelve_async, adapted: durable has no
    `call_and_shelve` (a reference to the stored result); `cache_info`
    tells whether the call was stored (its entries and bytes), and the
    result's default argument counts as given (`f(2)` is `f(2, y=1)`)."""
    ran: list[tuple[int, int]] = []

    @durable.step(cache=True)
    async def f(x: int, y: int = 1) -> int:
        await asyncio.sleep(0)
        ran.append((x, y))
        return x**2 + y

    async def main() -> None:
        for _ in range(2):
            assert await f(2) == 5
        assert await f(2, y=1) == 5 and await f(2, 1) == 5
        assert await f(2, y=2) == 6

    asyncio.run(main())
    info = durable.cache_info(f)
    assert (info.hits, info.misses, info.entries) == (3, 2, 2) and info.size > 0
    assert ran == [(2, 1), (2, 2)]


def test_joblib_memorized_func_call_async_changing_an_ignored_argument(cachedir: Path) -> None:
    """test_memorized_func_call_async: joblib ignores `counter`, which the
    function changes, and serves 1 again on the second call, leaving
    `counter` as it was. durable does not cache a call that changed an
    ignored argument (a hit could not redo the change): it runs on every
    call, with a warning, and the counter counts each call."""

    @durable.step(cache=durable.Cache(ignore=["counter"]))
    async def ff(x: int, counter: dict[int, int]) -> int:
        await asyncio.sleep(0)
        counter[x] = counter.get(x, 0) + 1
        return counter[x]

    counter: dict[int, int] = {}

    async def main() -> list[int]:
        return [await ff(2, counter), await ff(2, counter)]

    with pytest.warns(UserWarning, match="ignore"):
        assert asyncio.run(main()) == [1, 2]
    assert counter == {2: 2} and durable.cache_info(ff).entries == 0


def test_joblib_cached_async_step_inside_runs(cachedir: Path) -> None:
    """test_memory_integration_async's cached coroutine, called by two runs
    of an async workflow: the second run's step is served from the cache
    (no execution), and each run replays its own record when called
    again."""
    accumulator: list[int] = []

    @durable.step(cache=True)
    async def f(n: int) -> int:
        accumulator.append(n)
        return n * 10

    @durable.workflow
    async def flow(n: int) -> int:
        return await f(n) + 1

    async def main() -> None:
        assert await flow.with_options(run_id="a")(3) == 31
        assert await flow.with_options(run_id="b")(3) == 31
        assert await flow.with_options(run_id="a")(3) == 31
        assert await f(3) == 30  # a plain call: the same entry

    asyncio.run(main())
    assert accumulator == [3]
    assert sorted(i.run_id for i in flow.runs()) == ["a", "b"]
