"""Instructions per recorded and per replayed step, counted by valgrind's
callgrind: unlike time, the count does not depend on what else the machine
is doing, so two versions can be compared on a busy machine.

    python benchmarks/instructions.py [N] [--shapes]   # needs valgrind on PATH

`--shapes` adds a step returning a small dict (a dict holding a list) and
one taking a small dict argument (lists and a tuple in it).

Each figure is the difference between two runs of a child process (N and
4N recorded steps; N recorded, then N recorded plus a resume replaying
them), so start-up and imports cancel out. Durability "none": the sync is
the kernel's work, which callgrind does not count, nor any system call."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

CHILD = """
import sys, tempfile
import durable

n, replay, hits = int(sys.argv[1]), sys.argv[2] == "replay", sys.argv[2] == "hits"
shape = sys.argv[3] if len(sys.argv) > 3 else "int"

def small(i):
    return {"i": i, "name": f"item-{i}", "values": [i, i * 2, i * 3]}

if sys.argv[2] in ("hits", "misses"):  # a cached step called plainly, as benchmarks/cache.py
    cached = durable.step(cache=True, name="small")(small)
    durable.configure(store=tempfile.mkdtemp())
    for i in range(200):
        cached(i)  # computed and kept
        cached(i)  # read and checked once
    for _ in range(n if hits else 0):
        for i in range(100):
            cached(i)
    sys.exit()

@durable.step(name="trivial")
def trivial(i):
    return i * 2 + 1

if shape == "dict":  # through a lambda (the sum below), as "arg"
    dict_step = durable.step(name="small")(small)
    trivial = lambda i: dict_step(i)["i"]
elif shape == "arg":
    @durable.step(name="arg")
    def taking(row):
        return row["i"]
    trivial = lambda i: taking({"i": i, "name": f"item-{i}", "values": [i, i * 2], "pair": (i, 1)})

@durable.workflow(name="bench", run_id="b",
                  store=durable.open_store(tempfile.mkdtemp(), durability="none"))
def flow():
    total = sum(trivial(i) for i in range(n))
    durable.suspend("measured")

for _ in range(2 if replay else 1):
    try:
        flow()
    except durable.Suspended:
        pass
"""


def instructions(n: int, mode: str, shape: str = "int") -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(CHILD)
    callgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    try:
        # A fixed hash seed: with a fresh one per child, the same code's
        # figure moved by several thousand instructions a step.
        out = subprocess.run(
            [*callgrind, sys.executable, script.name, str(n), mode, shape],
            capture_output=True,
            text=True,
            check=True,
            # No cancel marker polled by the wall clock: a slow run would poll more.
            env={**os.environ, "PYTHONHASHSEED": "0", "DURABLE_CANCEL_POLL": "1000000"},
        )
    finally:
        os.unlink(script.name)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not on PATH (Debian: apt-get install valgrind)")
    given = [a for a in sys.argv[1:] if a != "--shapes"]
    n = int(given[0]) if given else 1000
    record = (instructions(4 * n, "record") - instructions(n, "record")) // (3 * n)
    replay = (instructions(n, "replay") - instructions(n, "record")) // n
    hit = (instructions(n // 100 + 1, "hits") - instructions(1, "misses")) // (100 * (n // 100 + 1))
    print(f"N = {n}: {record:,} instructions per recorded step, {replay:,} per replayed step")
    print(f"{hit:,} instructions per cache hit of a small output in a plain call")
    if "--shapes" in sys.argv:
        for shape, said in (("dict", "a small dict output"), ("arg", "a small dict argument")):
            once = instructions(n, "record", shape)
            record = (instructions(4 * n, "record", shape) - once) // (3 * n)
            replay = (instructions(n, "replay", shape) - once) // n
            print(f"{said}: {record:,} instructions per recorded step, {replay:,} per replayed step")


if __name__ == "__main__":
    main()
