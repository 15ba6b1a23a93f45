"""The peers in benchmarks/overhead.py's table, when installed (the `bench`
extra): DBOS Transact with a SQLite system database, and LangGraph's
functional API (`@entrypoint`/`@task`) with its SQLite checkpointer, each
doing the same N trivial steps as durable, with each library's default
durability (DBOS: SQLite's defaults; LangGraph: `durability="sync"`).

Each peer runs in a fresh interpreter, so that neither its imports, threads
nor tracer provider touch durable's figures, and prints one JSON line:

    python benchmarks/peers.py dbos|langgraph N FOLDER

- record: the first run, per step (wall).
- replay: the recorded steps answered from the record, per step. LangGraph:
  resuming the run after an `interrupt()` at its end. DBOS has no suspend:
  `fork_workflow(id, N + 1)`, a new workflow holding copies of the N step
  outputs, run to its end (the copy is included).
- re-call: a completed run called again with its id (DBOS only: calling a
  LangGraph entrypoint again on its thread starts a new run).

Every figure is checked: the steps ran exactly N times in all."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# name: (label, modules it needs, what to install, how it replays)
PEERS = {
    "dbos": ("DBOS (SQLite)", ("dbos",), "dbos", "replay (fork)"),
    "langgraph": (
        "LangGraph (SqliteSaver)",
        ("langgraph", "langgraph.checkpoint.sqlite"),
        "langgraph langgraph-checkpoint-sqlite",
        "replay (resume)",
    ),
}


def installed(modules: tuple[str, ...]) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:  # a parent package is missing
        return False


def measure(peer: str, n: int, folder: Path) -> dict[str, float]:
    """One peer's figures, from a fresh interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, peer, str(n), str(folder)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{peer} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def report(n: int, root: Path, ours: dict[str, float]) -> None:
    """Print a line per peer, each figure with its ratio to durable's
    (`ours`: record, replay, re-call, seconds per step / per call)."""
    us = 1e6
    for peer, (label, modules, package, replayed) in PEERS.items():
        if not installed(modules):
            print(f"  {label:25} not installed (pip install {package}, or 'durable-fn[bench]')")
            continue
        try:
            theirs = measure(peer, n, root / peer)
        except Exception as e:  # one peer failing must not lose the table
            print(f"  {label:25} failed: {e}")
            continue
        parts = [
            f"record {theirs['record'] * us:8.2f} us/step ({theirs['record'] / ours['record']:.2f}x durable)",
            f"{replayed} {theirs['replay'] * us:.2f} us/step ({theirs['replay'] / ours['replay']:.2f}x)",
        ]
        if "re-call" in theirs:
            ratio = theirs["re-call"] / ours["re-call"]
            parts.append(f"re-call {theirs['re-call'] * 1e3:.2f} ms ({ratio:.2f}x)")
        print(f"  {label:25} " + "; ".join(parts))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def trivial(i: int) -> int:
    return i * 2 + 1


def check(what: str, got: object, want: object) -> None:
    if got != want:
        raise SystemExit(f"{what}: {got!r}, expected {want!r}; the figures would mean nothing")


def run_dbos(n: int, folder: Path) -> dict[str, float]:
    from dbos import DBOS, SetWorkflowID

    url = f"sqlite:///{folder.resolve() / 'dbos.sqlite'}"
    DBOS(config={"name": "durable-bench", "system_database_url": url, "log_level": "WARNING"})
    ran = [0]

    @DBOS.step()
    def step(i: int) -> int:
        ran[0] += 1
        return trivial(i)

    @DBOS.workflow()
    def flow(count: int) -> int:
        return sum(step(i) for i in range(count))

    DBOS.launch()
    try:

        def call() -> int:
            with SetWorkflowID("bench"):
                return flow(n)  # type: ignore[no-any-return]

        record, total = timed(call)
        replay, again = timed(lambda: DBOS.fork_workflow("bench", n + 1).get_result())
        recall = min(timed(call)[0] for _ in range(20))
        check("DBOS results", (again, ran[0]), (total, n))
    finally:
        DBOS.destroy()
    return {"record": record / n, "replay": replay / n, "re-call": recall}


def run_langgraph(n: int, folder: Path) -> dict[str, float]:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.func import entrypoint, task
    from langgraph.types import Command, interrupt

    ran = [0]

    @task  # type: ignore[misc]
    def step(i: int) -> int:
        ran[0] += 1
        return trivial(i)

    connection = sqlite3.connect(folder / "langgraph.sqlite", check_same_thread=False)

    @entrypoint(checkpointer=SqliteSaver(connection))  # type: ignore[misc]
    def flow(count: int) -> int:
        total = sum(step(i).result() for i in range(count))
        interrupt("measure replay")  # the run stops here; resuming replays every step
        return total

    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 10 * n + 100}
    try:
        record, _ = timed(lambda: flow.invoke(n, config, durability="sync"))
        replay, total = timed(lambda: flow.invoke(Command(resume=True), config, durability="sync"))
    finally:
        connection.close()
    check("LangGraph results", (total, ran[0]), (sum(trivial(i) for i in range(n)), n))
    return {"record": record / n, "replay": replay / n}


def main() -> None:
    peer, n, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    run = {"dbos": run_dbos, "langgraph": run_langgraph}[peer]
    print(json.dumps(run(n, folder)))


if __name__ == "__main__":
    main()
