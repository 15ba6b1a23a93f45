"""Item functions for the fan-out tests.

They live in an importable module so that process-pool and Dask workers can
load them by reference. Each appends the item's index to a log file (one
O_APPEND write, atomic across processes), so a test counts executions in
other processes by reading that file."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import durable

Item = tuple[str, int]


def note(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def logged(path: str | Path) -> list[int]:
    """Indexes logged so far, in the order they were logged."""
    p = Path(path)
    return [int(x) for x in p.read_text().split()] if p.exists() else []


def expected(i: int) -> str:
    """What every item function returns for index i: unique to the item."""
    return f"item-{i}-{i * i}"


@durable.step
def work(item: Item) -> str:
    path, i = item
    note(path, str(i))
    return expected(i)


def plain_work(item: Item) -> str:
    """Not a step: loop_over takes any function with source."""
    path, i = item
    note(path, str(i))
    return expected(i)


def tagged(f: Callable[[Item], str]) -> Callable[[Item], str]:
    """A user's decorator over a step: its own code runs around the step."""

    @functools.wraps(f)
    def wrapper(item: Item) -> str:
        return "tagged:" + f(item)

    return wrapper


@tagged
@durable.step
def tagged_work(item: Item) -> str:
    path, i = item
    note(path, str(i))
    return expected(i)


class Worker:
    """Steps reached as methods: `loop_over(Worker("x").work, items)`."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @durable.step
    def work(self, item: Item) -> str:
        path, i = item
        note(path, str(i))
        return f"{self.prefix}{expected(i)}"

    @durable.step(cache=True)
    def cached(self, item: Item) -> str:
        path, i = item
        note(path, str(i))
        return f"{self.prefix}{expected(i)}"

    @durable.step
    async def awork(self, item: Item) -> str:
        path, i = item
        note(path, str(i))
        return f"{self.prefix}{expected(i)}"


@durable.step
def picky(item: Item) -> str:
    """Fails for the index written in `<log>.fail`, while that file exists."""
    path, i = item
    marker = Path(path + ".fail")
    if marker.exists() and int(marker.read_text()) == i:
        raise ValueError(f"item {i} refused")
    note(path, str(i))
    return expected(i)


@durable.step
def deadly(item: Item) -> str:
    """Kills its own worker process (kill -9) for the index in `<log>.kill`,
    once: the marker goes first."""
    path, i = item
    marker = Path(path + ".kill")
    if marker.exists() and int(marker.read_text()) == i:
        marker.unlink()
        os.kill(os.getpid(), 9)
    note(path, str(i))
    return expected(i)


@durable.step(retries=2, retry_delay=0)
def flaky(item: Item) -> str:
    """Fails on its first two attempts for each item, then succeeds."""
    path, i = item
    note(path, str(i))
    if logged(path).count(i) < 3:
        raise ConnectionError(f"attempt for item {i} failed")
    return expected(i)


@durable.step(retries=1, retry_delay=0)
def hopeless(item: Item) -> str:
    path, i = item
    note(path, str(i))
    if i == 5:
        raise KeyError(f"item {i} never works")
    return expected(i)


# Thread-pool only: the first `gate_parties` items meet here, so they are all
# running at once when item 0 fails.
gate = threading.Barrier(4)


@durable.step
def gated(item: Item) -> str:
    path, i = item
    if i < gate.parties:
        gate.wait(timeout=30)
        if i == 0:
            raise RuntimeError("item 0 fails while 1, 2 and 3 are running")
    note(path, str(i))
    return expected(i)


def records(store: durable.Store, wf: str, run_id: str, kind: str) -> list[str]:
    """Names of a run's live records of one kind ("steps", "items"), through
    the Store protocol, whatever the backend's layout."""
    return sorted(n for n in store.load_records(wf, run_id) if n.startswith(kind + "/"))


def item_indexes(store: durable.Store, wf: str, run_id: str) -> set[int]:
    """Indexes of the checkpointed items a run holds right now."""
    return {int(n.rsplit("/", 1)[1]) for n in records(store, wf, run_id, "items")}


def task_states(dask_worker: Any) -> list[str]:
    return [task.state for task in dask_worker.state.tasks.values()]
