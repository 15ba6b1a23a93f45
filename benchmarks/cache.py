"""The step cache (`@durable.step(cache=True)`) against joblib.Memory, side
by side in one process, on the local disk: the cost of a hit and the
overhead of a miss, for a small output and a 100 MB numpy array.

    python benchmarks/cache.py [N]      # needs the `bench` extra (joblib, numpy)

A durable hit in a plain call checks that nothing the step's fingerprint
was computed from changed (its memo's witness: a few identity tests and a
`stat` of each source file), digests the arguments, finds the store as the
environment says now, finds the entry and checks it (on local disk one
`lstat` shows it is the file this process last checked, else it is read
and its checksum checked) and decodes it. A large
value's blob is checked against the sums of each 8 MiB chunk that the entry
records (CRC32; SHA-256 with a signing key) as each chunk is read, by a few
threads at once; its arrays are read into memory of their own (huge pages
where the system gives them) and used there. A hit inside a run also
records the run's position (one fsync'ed record). joblib hashes the
arguments and loads its pickle, unverified; it does not look at helpers or
constants.

CPU time counts every thread: a large hit's checking runs beside its
reading, so it shortens the wall time, not the CPU time."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np

import durable

BIG = 100 * 1000 * 1000 // 8  # float64s in 100 MB


def small(i: int) -> dict[str, Any]:
    return {"i": i, "name": f"item-{i}", "values": [i, i * 2, i * 3]}


def large(seed: int) -> Any:
    return np.random.default_rng(seed).random(BIG)


def per_call(fn: Callable[[int], object], args: range, rounds: int = 1) -> tuple[float, float]:
    """Wall-clock and CPU seconds per call, each the best of `rounds` passes
    over args (CPU time is what a busy machine disturbs least; wall time
    includes waiting for the disk; the best pass is the least disturbed)."""
    best = (float("inf"), float("inf"))
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        for a in args:
            fn(a)
        wall, used = time.perf_counter() - start, time.process_time() - cpu
        best = (min(best[0], wall / len(args)), min(best[1], used / len(args)))
    return best


def measure(
    fn: Callable[[int], object], n: int, plain: Callable[[int], object]
) -> dict[str, float]:
    """Miss overhead over a plain call (n distinct arguments), then the
    cost of a hit (the same arguments again, best of 5 passes)."""
    base = per_call(plain, range(n))
    miss = per_call(fn, range(n, 2 * n))
    hit = per_call(fn, range(n, 2 * n), rounds=5)
    return {
        "miss overhead": miss[0] - base[0],
        "hit": hit[0],
        "hit (CPU time)": hit[1],
    }


def in_run_hit(step: Callable[[int], object], store: durable.Store, n: int) -> float:
    """Wall-clock seconds per hit inside a run."""
    @durable.workflow(store=store, name="bench")
    def flow(first: int) -> int:
        return len([step(i) for i in range(first, first + n)])

    flow(10 * n)  # computes and caches
    start = time.perf_counter()
    flow.with_options(run_id="second")(10 * n)  # another run: every call is a hit
    return (time.perf_counter() - start) / n


def main(n: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="durable-cache-bench-"))
    try:
        store = durable.open_store(root / "durable")
        os.environ["DURABLE_STORE"] = str(root / "durable")  # where plain calls cache
        memory = joblib.Memory(root / "joblib", verbose=0)
        rows: list[tuple[str, dict[str, float], dict[str, float]]] = []
        d_small = durable.step(cache=True, name="small")(small)
        rows.append(
            ("small output", measure(d_small, n, small), measure(memory.cache(small), n, small))
        )
        d_large = durable.step(cache=True, name="large")(large)
        rows.append(
            ("100 MB array", measure(d_large, 2, large), measure(memory.cache(large), 2, large))
        )
        run_hit = in_run_hit(durable.step(cache=True, name="small_in_run")(small), store, n)
        report(rows, run_hit)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(rows: list[tuple[str, dict[str, float], dict[str, float]]], run_hit: float) -> None:
    print(f"{'':14} {'':15} {'durable':>11} {'joblib':>11}  joblib/durable")
    for label, ours, theirs in rows:
        for what in ("hit", "hit (CPU time)", "miss overhead"):
            a, b = ours[what], theirs[what]
            ratio = f"{b / a:6.1f}x" if a > 0 else "   -"
            print(f"{label:14} {what:15} {a * 1e6:9.0f}us {b * 1e6:9.0f}us  {ratio}")
        label = ""
    joblib_hit = rows[0][2]["hit"]
    print(
        f"{'small output':14} {'hit in a run':15} {run_hit * 1e6:9.0f}us {'':>11}  "
        f"{joblib_hit / run_hit:6.1f}x  (records the run's position too)"
    )
    # Other work on the machine disturbs the figures: say how much there was.
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"load average {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
