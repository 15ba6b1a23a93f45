"""Per-step overhead of durable on the local store, at each durability level,
next to the floors measured in the same run (a plain call, an append, an
append plus fdatasync) and, when the `bench` extra is installed,
joblib.Memory, DBOS and LangGraph doing the same work (`peers.py`).

    make bench            # or: python benchmarks/overhead.py [N]

Record: CPU and wall time per step. Replay: a resumed run replaying every
step, end to end (lease, manifest, reading the log) per step. Re-call: a
completed run called again. Memory: what a replayed run holds (tracemalloc).

The floors, `minimal.py` and durable are measured in ROUNDS alternating
blocks (floors, then durable, then the floors again, ...), each of N steps:
each figure is the median of its blocks, [least-most] beside it, and each
ratio the median of the per-block ratios (`paired.py`), since this machine's
fdatasync cost moves by ten times within a minute. The peers run once each,
after the blocks, compared with durable's medians."""

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
from statistics import median

import minimal
import paired
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


# What durable appends a trivial step under "fsync" (the log's size over its
# steps: 118 bytes under "none", 132 with the mark an "fsync" record carries).
ENTRY = 132
# The flags durable's log is opened with (`_storage.logfile.open_for_append`).
LOG_FLAGS = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def bench_floor(n: int, root: Path, sync: bool, k: int = 0) -> float:
    """One append of a record-sized entry (plus fdatasync) per step, to a
    file opened as durable opens its log and made new for each block, in a
    folder of its own, as each block's run log is."""
    folder = root / f"floor-{sync}-{k}"
    folder.mkdir()
    fd = os.open(folder / "records.log", LOG_FLAGS | os.O_CREAT, 0o644)
    entry = b"x" * ENTRY
    try:

        def appends() -> None:
            for _ in range(n):
                os.write(fd, entry)
                if sync:
                    os.fdatasync(fd)

        return timed(appends)[0] / n
    finally:
        os.close(fd)


def bench_durable(n: int, folder: Path, level: str, memory: bool) -> dict[str, float]:
    """One block of durable's figures at `level`, in a new store at `folder`;
    the memory a replay holds only if `memory` (tracemalloc slows the replay)."""
    store = durable.open_store(folder, durability=level)
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
    figures = {"record wall": rec_wall / n, "record cpu": rec_cpu / n, "replay": rep_wall / n}
    if memory:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        replay()
        tracemalloc.stop()
        figures["memory"] = held[-1] - base
    flow.resume("b", done=True)  # completes it
    # Best of 20: one re-call is a fraction of a millisecond, which one
    # collection of the replay's garbage or a busy neighbour outweighs.
    figures["re-call"] = min(timed(lambda: flow.resume("b", done=True))[0] for _ in range(20))
    return figures


LEVELS = ("fsync", "batch", "none")
ROUNDS = 5  # blocks of each figure; the median of 5 drops the two most disturbed


def one_round(n: int, root: Path, k: int) -> dict[str, float]:
    """Block k of every figure the table compares: the floors, then
    `minimal.py` and durable, seconds apart, so that each ratio is taken
    from figures that saw the same machine."""
    block = {
        "plain": bench_plain(n),
        "append": bench_floor(n, root, False, k),
        "append+fdatasync": bench_floor(n, root, True, k),
    }
    # The three synced figures next to each other, then the rest.
    for who, level in (("durable", "fsync"), ("minimal", "fsync"), ("minimal", "none"),
                       ("durable", "batch"), ("durable", "none")):  # fmt: skip
        if who == "minimal":
            least = minimal.measure(n, root / f"minimal-{level}-{k}", level == "fsync")
            block.update({f"minimal {level} {key}": value for key, value in least.items()})
        else:
            ours = bench_durable(n, root / f"durable-{level}-{k}", level, memory=k == 0)
            block.update({f"{level} {key}": value for key, value in ours.items()})
    return block


BIG = list(range(100_000))


def big_output(i: int) -> list[int]:
    return BIG


def big_reader(i: int) -> int:
    """A trivial step reading BIG as `big_output` does: a step's fingerprint
    walks a module global it reads at each run (`_fingerprint.holds`, about
    0.15x msgpack's time a step here at 40 steps a run), which is no part of
    recording an output, so each run of the two pays it alike."""
    return i * 2 + 1 if BIG else 0


def bench_large(root: Path, steps: int = 40) -> tuple[float, float]:
    """(msgpack's own time to pack a 100,000-int list, the CPU a recorded
    step returning that list costs beyond a trivial one reading it) in seconds, under
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
    costs = [per_step(k, big_output) - per_step(k, big_reader) for k in range(5)]
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
    try:
        blocks = [one_round(n, root, k) for k in range(ROUNDS)]
        # (the memory a replay holds is in the first block only)
        f = {key: [block[key] for block in blocks if key in block] for key in blocks[0]}
        load = ""
        if hasattr(os, "getloadavg"):  # what else the machine did: the figures move with it
            load = ", load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"N = {n} trivial steps, local store ({root.parent}), {time.strftime('%Y-%m-%d %H:%M')}{load};"
            f" medians of {ROUNDS} alternating blocks [least-most], ratios per block"
        )
        for label, key in (
            ("plain call", "plain"),
            ("floor: append", "append"),
            ("floor: append+fdatasync", "append+fdatasync"),
        ):
            print(f"  {label:25} {paired.figure(f[key], US):>10} us/step")
        report_minimal(f)
        for level in LEVELS:
            report_durable(level, f)
        compare_minimal(f)
        packed, large = bench_large(root)
        print(
            f"  100,000-int list output     msgpack {packed * US:8.0f} us; durable record"
            f" {large * US:.0f} us CPU beyond a trivial step reading it ({large / packed:.2f}x msgpack)"
        )
        report_joblib(bench_joblib(n, root))
        # Every peer's default is to make each step durable: compared with "fsync".
        ours = {what: median(f[f"fsync {what}"]) for what in ("replay", "re-call")}
        peers.report(n, root, {"record": median(f["fsync record wall"]), **ours})
    finally:
        shutil.rmtree(root, ignore_errors=True)


US = 1e6


def report_durable(level: str, f: dict[str, list[float]]) -> None:
    wall, synced = f[f"{level} record wall"], f["append+fdatasync"]
    print(
        f"  durable {level:5}  record {paired.figure(wall, US)} us/step wall"
        f" ({paired.times(wall, synced)} append+fdatasync),"
        f" {paired.figure(f[f'{level} record cpu'], US)} us CPU;"
        f" replay {paired.figure(f[f'{level} replay'], US)} us/step;"
        f" re-call {paired.figure(f[f'{level} re-call'], 1e3)} ms;"
        f" replay holds {f[f'{level} memory'][0] / 1e6:.2f} MB"
    )


def report_minimal(f: dict[str, list[float]]) -> None:
    """The same work as durable's in one Python function (`minimal.py`):
    what this interpreter and these system calls cost before any feature."""
    wall = f["minimal fsync record wall"]
    print(
        f"  floor: same work in Python {paired.figure(f['minimal none record cpu'], US)} us CPU/step,"
        f" {paired.figure(wall, US)} us wall with fdatasync"
        f" ({paired.times(wall, f['append+fdatasync'])} append+fdatasync);"
        f" replay {paired.figure(f['minimal none replay'], US)} us/step (benchmarks/minimal.py)"
    )


def compare_minimal(f: dict[str, list[float]]) -> None:
    """durable's figures as multiples of the same work done in one function,
    block by block."""
    print(
        "  durable / same work in Python: record CPU"
        f" {paired.times(f['none record cpu'], f['minimal none record cpu'])}, fsync wall"
        f" {paired.times(f['fsync record wall'], f['minimal fsync record wall'])}, replay"
        f" {paired.times(f['none replay'], f['minimal none replay'])}"
    )


def report_joblib(jl: tuple[float, float] | None) -> None:
    if jl is None:
        print("  joblib.Memory             not installed (pip install 'durable-fn[bench]')")
        return
    print(f"  joblib.Memory first       {jl[0] * 1e6:10.2f} us/call")
    print(f"  joblib.Memory cached      {jl[1] * 1e6:10.2f} us/call")


if __name__ == "__main__":
    main()
