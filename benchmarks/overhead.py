"""Per-step overhead of durable on the local store, against a plain call and
(when the `bench` extra is installed) joblib.Memory doing the same work.

    make bench            # or: python benchmarks/overhead.py [N]

Recording includes an fsync of every record; replay includes reading every
record back from disk (one listing, one read per record)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import durable


def trivial(i: int) -> int:
    return i * 2 + 1


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_plain(n: int) -> float:
    return timed(lambda: [trivial(i) for i in range(n)]) / n


def bench_durable(n: int, root: Path) -> tuple[float, float]:
    store = durable.open_store(root / "durable")
    step = durable.step(name="trivial")(trivial)

    @durable.workflow(name="bench", store=store, run_id="b")
    def flow(done: bool = False) -> int:
        total = sum(step(i) for i in range(n))
        if not done:
            durable.suspend("measure replay")
        return total

    def record() -> None:
        try:
            flow()
        except durable.Suspended:
            pass

    def replay() -> None:
        try:
            flow.resume("b")
        except durable.Suspended:
            pass

    return timed(record) / n, timed(replay) / n


def bench_joblib(n: int, root: Path) -> tuple[float, float] | None:
    try:
        import joblib
    except ImportError:
        return None
    memory = joblib.Memory(root / "joblib", verbose=0)
    cached = memory.cache(trivial)
    first = timed(lambda: [cached(i) for i in range(n)]) / n
    second = timed(lambda: [cached(i) for i in range(n)]) / n
    return first, second


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    root = Path(tempfile.mkdtemp(prefix="durable-bench-"))
    try:
        plain = bench_plain(n)
        record, replay = bench_durable(n, root)
        jl = bench_joblib(n, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    us = 1e6
    print(f"N = {n} trivial steps, local store ({root.parent})")
    print(f"  plain call            {plain * us:10.2f} us/step")
    print(f"  durable record        {record * us:10.2f} us/step  ({record / plain:,.0f}x plain)")
    print(f"  durable replay        {replay * us:10.2f} us/step  ({replay / plain:,.0f}x plain)")
    if jl is None:
        print("  joblib.Memory         not installed (pip install 'durable-fn[bench]')")
        return
    print(f"  joblib.Memory first   {jl[0] * us:10.2f} us/call  ({jl[0] / plain:,.0f}x plain)")
    print(f"  joblib.Memory cached  {jl[1] * us:10.2f} us/call  ({jl[1] / plain:,.0f}x plain)")
    print(
        f"  record: joblib/durable = {jl[0] / record:.1f}x   replay: joblib/durable = {jl[1] / replay:.1f}x"
    )


if __name__ == "__main__":
    main()
