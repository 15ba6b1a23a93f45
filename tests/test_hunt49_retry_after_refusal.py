"""A gathered async step waiting its retry delay while another task of the
run refuses it (`DefinitionChangedError`: a call that changed since its
record): once the delay was over, the step made its next try, though the
run was refused and nothing may run in it any more (its body executed for
a run that can only fail). A `loop_over` item's retry checked the refusal
(`_fanout.tries`), a step's did not, and an item checked it before its
delay, not after: both now ask the one rule (`replay.boundary`) once the
delay is over.

The delay ends only once the refusal is taken: a clock whose async sleep
waits for it, so that the order is the test's, not the event loop's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import durable
from durable._storage import clock as clocks
from durable.testing import FakeClock

tried: list[str] = []


class RefusalClock(FakeClock):
    """A retry delay (an async sleep) is over once the other task refused."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: asyncio.Event | None = None

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        if self.refused is not None:
            await self.refused.wait()


@pytest.fixture
def clock() -> Iterator[RefusalClock]:
    fake, previous = RefusalClock(), clocks.clock
    clocks.clock = fake
    try:
        yield fake
    finally:
        clocks.clock = previous


class Phase:
    """What the run's code reads outside its definition (never part of its
    fingerprint): which run this is, and when flaky's first try failed."""

    def __init__(self) -> None:
        self.second = False
        self.failed = asyncio.Event()


def make(store: durable.Store, clock: RefusalClock, loop: bool) -> tuple[Any, Phase]:
    """A run of `flaky` (a step, or a loop_over item of it) gathered with
    `other`, called once flaky's first try has failed, with an argument
    that differs in the second run: `other`'s record is refused there."""
    phase = Phase()

    @durable.step(name="flaky", retries=2, retry_delay=5.0, retry_on=OSError)
    async def flaky(x: int = 0) -> int:
        tried.append("flaky")
        if not phase.second:
            raise ValueError("not retried: the first run records other alone")
        phase.failed.set()
        raise OSError("the service is down")

    @durable.step(name="other")
    async def other(second: bool) -> int:
        tried.append("other")
        return 1

    async def after_failure() -> int:
        if phase.second:
            await phase.failed.wait()
        try:
            return await other(phase.second)
        except durable.DefinitionChangedError:
            assert clock.refused is not None
            clock.refused.set()  # only now is flaky's delay over
            raise

    @durable.workflow(name="gathered", store=store, run_id="r")
    async def gathered() -> list[Any]:
        clock.refused, phase.failed = asyncio.Event(), asyncio.Event()
        first = durable.loop_over(flaky, [0]) if loop else flaky()
        return list(await asyncio.gather(first, after_failure()))

    return gathered, phase


@pytest.mark.parametrize("loop", [False, True], ids=["step", "loop_over"])
def test_a_step_in_its_retry_delay_makes_no_try_once_the_run_is_refused(
    store: durable.Store, clock: RefusalClock, loop: bool
) -> None:
    tried.clear()
    gathered, phase = make(store, clock, loop)
    with pytest.raises(ValueError, match="not retried"):
        asyncio.run(gathered())
    assert sorted(tried) == ["flaky", "other"]
    tried.clear()
    phase.second = True
    with pytest.raises(durable.DefinitionChangedError, match="other"):
        asyncio.run(gathered())
    # Was: flaky twice (a step and an item alike), its retry made after the refusal.
    assert tried == ["flaky"]
    assert clock.slept == [5.0]  # the one delay begun before the refusal
