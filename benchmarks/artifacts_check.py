"""What checking artifacts costs when a completed run is called again.

A one-step workflow writes a folder of files and registers it; the timed part
is calling the completed run again (manifest read, records read, artifact
check, recorded value returned). Printed as ratios against the same call for
a step that registers nothing. Run:

    PYTHONPATH=. python benchmarks/artifacts_check.py [files] [kib_per_file]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import durable


def make_run(root: Path, name: str, verify: str | None, files: int, kib: int) -> Any:
    data = os.urandom(kib * 1024)
    out = root / name

    @durable.step(name="produce", verify=verify or "digest")
    def produce() -> int:
        out.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            (out / f"part-{i:05d}.bin").write_bytes(data)
        if verify is not None:
            durable.artifact(out)
        return files

    @durable.workflow(name=name, store=str(root / "store"), run_id="bench")
    def flow() -> int:
        return produce()

    flow()
    return flow


def best_of(fn: Any, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    kib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain = best_of(make_run(root, "plain", None, files, kib))
        mtime = best_of(make_run(root, "mtime", "mtime", files, kib))
        digest = best_of(make_run(root, "digest", "digest", files, kib))
    size = files * kib / 1024
    print(f"completed run called again, folder of {files} files x {kib} KiB ({size:.1f} MiB)")
    print(f"  no artifacts      {plain * 1e3:8.2f} ms   1.0x")
    print(f"  verify='mtime'    {mtime * 1e3:8.2f} ms   {mtime / plain:.1f}x")
    print(f"  verify='digest'   {digest * 1e3:8.2f} ms   {digest / plain:.1f}x")
    print(f"  digest throughput {size / max(digest - plain, 1e-9):8.0f} MiB/s")


if __name__ == "__main__":
    main()
