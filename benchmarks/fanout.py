"""Fan-out overhead: 200 items of 20 ms simulated I/O each, run by
`durable.loop_over` and by the bare executor doing the same work.

    python benchmarks/fanout.py [N] [--no-dask]

Modes: sequential (a plain loop), threads (ThreadPoolExecutor(16)), async
(16 coroutines at once) and Dask (LocalCluster, 2 worker processes x 8
threads). Each durable run is a fresh run on a local store, so the block is
executed and recorded, not replayed; `+items` adds checkpoint_items=True (one
record per item, written as it finishes). Printed: wall time, the ratio to
the bare executor, and the overhead per item. Parallel modes take the best
of three runs."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import itertools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import durable

DELAY = 0.020
WIDTH = 16
RUN_IDS = itertools.count()  # every durable run is a fresh one: executed, never replayed


def io_item(i: int) -> int:
    time.sleep(DELAY)  # stands for a network call
    return i * i


async def aio_item(i: int) -> int:
    await asyncio.sleep(DELAY)
    return i * i


def timed(fn: Callable[[], object], repeat: int = 1) -> float:
    """Best of `repeat` runs: on a small machine the noise is all upward."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


async def bare_async(items: list[int]) -> list[int]:
    gate = asyncio.Semaphore(WIDTH)

    async def one(i: int) -> int:
        async with gate:
            return await aio_item(i)

    return await asyncio.gather(*(one(i) for i in items))


def durable_run(store: durable.Store, fn: Any, items: list[int], **kw: Any) -> Callable[[], Any]:
    def run() -> Any:
        @durable.workflow(name="bench", store=store, run_id=f"r{next(RUN_IDS)}")
        def flow(items: list[int]) -> list[int]:
            return durable.loop_over(fn, items, **kw)

        return flow(items)

    return run


def durable_async(store: durable.Store, items: list[int], **kw: Any) -> Callable[[], Any]:
    def run() -> Any:
        @durable.workflow(name="bench_async", store=store, run_id=f"r{next(RUN_IDS)}")
        async def flow(items: list[int]) -> list[int]:
            return await durable.loop_over(aio_item, items, max_concurrency=WIDTH, **kw)

        return asyncio.run(flow(items))

    return run


def report(mode: str, n: int, bare: float, runs: dict[str, float]) -> None:
    print(f"{mode:<11} bare {bare:7.3f}s", end="")
    for label, took in runs.items():
        per_item = (took - bare) / n * 1000
        print(f" | {label} {took:7.3f}s x{took / bare:5.2f} {per_item:+6.2f} ms/item", end="")
    print()


def both(make: Callable[..., Callable[[], Any]], repeat: int = 3) -> dict[str, float]:
    return {
        "durable": timed(make(), repeat),
        "+items": timed(make(checkpoint_items=True), repeat),
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 200
    items = list(range(n))
    expected = [i * i for i in items]
    with tempfile.TemporaryDirectory() as tmp:
        store = durable.open_store(Path(tmp) / "store")
        print(f"{n} items of {DELAY * 1000:.0f} ms each; ratios are durable / bare executor")

        bare = timed(lambda: [io_item(i) for i in items])
        report("sequential", n, bare, both(lambda **kw: durable_run(store, io_item, items, **kw), 1))

        with cf.ThreadPoolExecutor(WIDTH) as pool:
            assert list(pool.map(io_item, items)) == expected  # warm the threads
            bare = timed(lambda: list(pool.map(io_item, items)), 3)
            make = lambda **kw: durable_run(store, io_item, items, executor=pool, **kw)  # noqa: E731
            report("threads", n, bare, both(make))

        bare = timed(lambda: asyncio.run(bare_async(items)), 3)
        report("async", n, bare, both(lambda **kw: durable_async(store, items, **kw)))

        if "--no-dask" not in sys.argv:
            bench_dask(store, n, items, expected)


def bench_dask(store: durable.Store, n: int, items: list[int], expected: list[int]) -> None:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask        skipped: install the `dask` extra")
        return
    with LocalCluster(
        n_workers=2, threads_per_worker=WIDTH // 2, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as client:
        assert client.gather(client.map(io_item, items, pure=False)) == expected  # warm up
        bare = timed(lambda: client.gather(client.map(io_item, items, pure=False)), 3)
        make = lambda **kw: durable_run(store, io_item, items, executor=client, **kw)  # noqa: E731
        report("dask", n, bare, both(make))


if __name__ == "__main__":
    main()
