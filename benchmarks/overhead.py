"""Per-step overhead of durable on the local store, at each durability level,
next to the floors measured in the same run (a plain call, an append, an
append plus fdatasync) and, when the `bench` extra is installed,
joblib.Memory, DBOS and LangGraph doing the same work (`peers.py`).

    make bench            # or: python benchmarks/overhead.py [N]

Record: CPU and wall time per step. Replay: a resumed run replaying every
step, end to end (lease, manifest, reading the log) per step. Re-call: a
completed run called again. Memory: what a replayed run holds (tracemalloc)."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import minimal
import peers

import durable


def trivial(i: int) -> int:
    return i * 2 + 1


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, cpu) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_plain(n: int) -> float:
    return timed(lambda: [trivial(i) for i in range(n)])[0] / n


def bench_floor(n: int, root: Path, sync: bool) -> float:
    """One append of a record-sized entry (plus fdatasync) per step."""
    fd = os.open(root / f"floor-{sync}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    entry = b"x" * 160
    try:

        def appends() -> None:
            for _ in range(n):
                os.write(fd, entry)
                if sync:
                    os.fdatasync(fd)

        return timed(appends)[0] / n
    finally:
        os.close(fd)


def bench_durable(n: int, root: Path, level: str) -> dict[str, float]:
    store = durable.open_store(root / f"durable-{level}", durability=level)
    step = durable.step(name="trivial")(trivial)
    held: list[int] = []

    @durable.workflow(name="bench", store=store, run_id="b")
    def flow(done: bool = False) -> int:
        total = sum(step(i) for i in range(n))
        if tracemalloc.is_tracing():
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
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

    rec_wall, rec_cpu = timed(record)
    rep_wall, _ = timed(replay)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    replay()
    tracemalloc.stop()
    flow.resume("b", done=True)  # completes it
    # Best of 20: one re-call is a fraction of a millisecond, which one
    # collection of the replay's garbage or a busy neighbour outweighs.
    recall = min(timed(lambda: flow.resume("b", done=True))[0] for _ in range(20))
    return {
        "record wall": rec_wall / n,
        "record cpu": rec_cpu / n,
        "replay": rep_wall / n,
        "re-call": recall,
        "memory": (held[-1] - base) if held else 0.0,
    }


BIG = list(range(100_000))


def big_output(i: int) -> list[int]:
    return BIG


def bench_large(root: Path, steps: int = 40) -> tuple[float, float]:
    """(msgpack's own time to pack a 100,000-int list, the CPU a recorded
    step returning that list costs beyond a trivial one) in seconds, under
    durability "none": what recording a large plain output adds to packing it."""
    import msgpack

    packer = msgpack.Packer(use_bin_type=True)
    packed = min(timed(lambda: [packer.pack(BIG) for _ in range(steps)])[1] for _ in range(5))

    def per_step(k: int, fn: Callable[[int], object]) -> float:
        store = durable.open_store(root / f"large-{fn.__name__}-{k}", durability="none")
        step = durable.step(name=fn.__name__)(fn)

        @durable.workflow(name="large", store=store, run_id="b")
        def flow() -> None:
            for i in range(steps):
                step(i)

        return timed(flow)[1]

    # The least of five: a run writes 16 MB, which the page cache may be slow to take.
    costs = [per_step(k, big_output) - per_step(k, trivial) for k in range(5)]
    return packed / steps, min(costs) / steps


def bench_joblib(n: int, root: Path) -> tuple[float, float] | None:
    try:
        import joblib
    except ImportError:
        return None
    memory = joblib.Memory(root / "joblib", verbose=0)
    cached = memory.cache(trivial)
    first = timed(lambda: [cached(i) for i in range(n)])[0] / n
    second = timed(lambda: [cached(i) for i in range(n)])[0] / n
    return first, second


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    root = Path(tempfile.mkdtemp(prefix="durable-bench-"))
    us = 1e6
    try:
        plain = bench_plain(n)
        append, synced = bench_floor(n, root, False), bench_floor(n, root, True)
        load = ""
        if hasattr(os, "getloadavg"):  # what else the machine did: the figures move with it
            load = ", load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"N = {n} trivial steps, local store ({root.parent}), {time.strftime('%Y-%m-%d %H:%M')}{load}"
        )
        print(f"  plain call                {plain * us:10.2f} us/step")
        print(f"  floor: append             {append * us:10.2f} us/step")
        print(f"  floor: append+fdatasync   {synced * us:10.2f} us/step")
        least = report_minimal(n, root, synced)
        figures = {}
        for level in ("fsync", "batch", "none"):
            r = figures[level] = bench_durable(n, root, level)
            print(
                f"  durable {level:5}  record {r['record wall'] * us:8.2f} us/step wall"
                f" ({r['record wall'] / synced:.2f}x append+fdatasync),"
                f" {r['record cpu'] * us:.2f} us CPU; replay {r['replay'] * us:.2f} us/step;"
                f" re-call {r['re-call'] * 1e3:.2f} ms; replay holds {r['memory'] / 1e6:.2f} MB"
            )
        compare_minimal(figures, least)
        packed, large = bench_large(root)
        print(
            f"  100,000-int list output     msgpack {packed * us:8.0f} us; durable record"
            f" {large * us:.0f} us CPU beyond a trivial step ({large / packed:.2f}x msgpack)"
        )
        report_joblib(bench_joblib(n, root))
        ours = figures["fsync"]  # every peer's default is to make each step durable
        peers.report(
            n,
            root,
            {"record": ours["record wall"], "replay": ours["replay"], "re-call": ours["re-call"]},
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report_minimal(n: int, root: Path, synced: float) -> dict[str, dict[str, float]]:
    """The same work as durable's in one Python function (`minimal.py`):
    what this interpreter and these system calls cost before any feature."""
    least = {
        level: minimal.measure(n, root / f"minimal-{level}", level == "fsync")
        for level in ("none", "fsync")
    }
    us = 1e6
    print(
        f"  floor: same work in Python {least['none']['record cpu'] * us:8.2f} us CPU/step,"
        f" {least['fsync']['record wall'] * us:.2f} us wall with fdatasync"
        f" ({least['fsync']['record wall'] / synced:.2f}x append+fdatasync);"
        f" replay {least['none']['replay'] * us:.2f} us/step (benchmarks/minimal.py)"
    )
    return least


def compare_minimal(
    figures: dict[str, dict[str, float]], least: dict[str, dict[str, float]]
) -> None:
    """durable's figures as multiples of the same work done in one function."""
    print(
        "  durable / same work in Python: record CPU"
        f" {figures['none']['record cpu'] / least['none']['record cpu']:.2f}x, fsync wall"
        f" {figures['fsync']['record wall'] / least['fsync']['record wall']:.2f}x, replay"
        f" {figures['none']['replay'] / least['none']['replay']:.2f}x"
    )


def report_joblib(jl: tuple[float, float] | None) -> None:
    if jl is None:
        print("  joblib.Memory             not installed (pip install 'durable-fn[bench]')")
        return
    print(f"  joblib.Memory first       {jl[0] * 1e6:10.2f} us/call")
    print(f"  joblib.Memory cached      {jl[1] * 1e6:10.2f} us/call")


if __name__ == "__main__":
    main()
