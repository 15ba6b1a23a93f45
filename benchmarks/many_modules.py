"""What the user's loaded modules cost a step's call: K small modules of the
user's (K = 50, 200, 800 by default) written into a temp folder and
imported, all at once before the first call, or one at a time between
calls (a notebook importing as it goes, a test worker collecting module
after module). Several fingerprint rules look through every loaded module
of the user's (`elsewhere`: what another module writes of a global a step
reads; `libstate`, `libcode`: what they set of, or hand to, a library a
step uses), so each figure is printed against K. Run:

    PYTHONPATH=. python benchmarks/many_modules.py [K ...]

Each K runs in a process of its own (the caches are the process's):

- first call: the first call of a workflow of one step, all K imported
  before it (the step's fingerprint computed, every module looked at);
- next call: a new run of it straight after (the fingerprint memoised);
- per import: a new run after each of the K modules is imported, one at a
  time (ms per call: the mean over all K, and over the last tenth);
- all imports: the sum of those K calls.

Every run is a new one (a new run id), at durability "none", so that the
store's syncs do not hide the fingerprint's work. Times are the process's
CPU (`time.process_time`: the machine may be shared), the first and next
call the best of three processes; the CPU of each whole child is printed too.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean

SETTINGS = "RATE = 3\nEXTRA = {}\nSEEN = []\n"

FLOW = '''\
import json

import durable
import settings


@durable.step(name="work")
def work(x):
    # reads another module's global and a library: both rules look at every loaded module
    return json.dumps({"x": x * settings.RATE})


@durable.workflow(name="many")
def flow(x):
    return work(x)
'''

# A small module of the user's: imports, a table, a function, a class, and a
# write into another module's object (placed by `elsewhere`, read by no step).
MODULE = '''\
import json
import random

import settings

TABLE_{i} = {{"k": {i}, "name": "mod_{i:04d}"}}
settings.EXTRA["mod_{i:04d}"] = {i}


def helper_{i}(x):
    return json.dumps({{"x": x, "i": {i}}}) + str(random.random() < 2)


class Thing_{i}:
    size = {i}

    def scaled(self, k):
        return self.size * k
'''


def write(folder: Path, k: int) -> list[str]:
    (folder / "settings.py").write_text(SETTINGS)
    (folder / "flow.py").write_text(FLOW)
    names = [f"mod_{i:04d}" for i in range(k)]
    for i, name in enumerate(names):
        (folder / f"{name}.py").write_text(MODULE.format(i=i))
    return names


def child(k: int, mode: str) -> dict[str, float]:
    """One K in this process: the figures of `mode` ("at-once" or "one-by-one")."""
    import durable

    tmp = Path(tempfile.mkdtemp(prefix="durable-many-"))
    (tmp / "src").mkdir()
    names = write(tmp / "src", k)
    sys.path.insert(0, str(tmp / "src"))
    sys.dont_write_bytecode = True
    store = durable.open_store(tmp / "store", durability="none")
    runs = iter(range(10**6))

    def call() -> float:
        flow = sys.modules["flow"].flow.with_options(run_id=f"r{next(runs)}", store=store)
        t0 = time.process_time()
        assert flow(2) == '{"x": 6}'
        return time.process_time() - t0

    out: dict[str, float] = {}
    if mode == "at-once":
        for name in names:
            importlib.import_module(name)
        importlib.import_module("flow")
        out["first call"] = call()
        out["next call"] = call()
    else:
        importlib.import_module("flow")
        call()
        call()
        each = []
        for name in names:
            importlib.import_module(name)
            each.append(call())
        out["per import"] = mean(each)
        out["per import, last tenth"] = mean(each[-max(1, k // 10) :])
        out["all imports"] = sum(each)
    out["cpu"] = time.process_time()
    return out


def run(k: int, mode: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), *sys.path])}
    got = subprocess.run(
        [sys.executable, __file__, "--child", str(k), mode], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(got.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def best(k: int, mode: str, times: int) -> dict[str, float]:
    runs = [run(k, mode) for _ in range(times)]
    return {key: min(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(int(sys.argv[2]), sys.argv[3])))
        return
    ks = [int(a) for a in sys.argv[1:]] or [50, 200, 800]
    print("CPU of a call (ms) against K, the user's modules loaded")
    head = ("K", "first call", "next call", "per import", "last tenth", "all imports", "cpu at once", "cpu 1 by 1")
    print("{:>5} {:>11} {:>10} {:>11} {:>11} {:>12} {:>12} {:>11}".format(*head))
    for k in ks:
        once, each = best(k, "at-once", 3), run(k, "one-by-one")
        print(
            f"{k:>5} {once['first call'] * 1e3:>8.1f} ms {once['next call'] * 1e3:>7.2f} ms"
            f" {each['per import'] * 1e3:>8.2f} ms {each['per import, last tenth'] * 1e3:>8.2f} ms"
            f" {each['all imports']:>10.2f} s {once['cpu']:>10.2f} s {each['cpu']:>9.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
