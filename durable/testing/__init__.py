"""Helpers for testing code that uses durable: a fresh in-memory store and a
clock that never waits. `durable.testing.store_conformance` (imported on its
own; it needs pytest) is the suite a store must pass."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from .._storage import clock as clocks
from .._storage.base import Store
from .._storage.factory import open_store


def memory_store(**options: object) -> Store:
    """A new, empty store that lives in this process only."""
    return open_store(f"memory://durable-test-{uuid.uuid4().hex}", **options)


class FakeClock(clocks.Clock):
    """Sleeps return at once and advance `now`; `slept` lists every request."""

    waits = False  # a sleep is one entry of `slept`, never cut in parts

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


@contextlib.contextmanager
def fake_clock(start: float = 1_700_000_000.0) -> Iterator[FakeClock]:
    """Replace the engine's clock (retry delays, durable sleep) for a block."""
    fake = FakeClock(start)
    previous = clocks.clock
    clocks.clock = fake
    try:
        yield fake
    finally:
        clocks.clock = previous
