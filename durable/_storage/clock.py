"""Time as durable sees it: the stamps on records (started, ended, created,
updated), the wake-up time of a durable sleep and the waits between
retries, all read from one clock that `durable.testing.fake_clock` swaps.

It sits with storage because every record is stamped with it and run
management, which imports storage only, compares those stamps
(`gc(older_than=...)`). Waiting as the engine does it (a graceful stop ends
a wait) is `_core.plan.pause`. Leases do not use it: other processes read
their expiry, so they need the real time."""

from __future__ import annotations

import time


class Clock:
    """The real clock; a test clock subclasses it (`durable.testing.FakeClock`)."""

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio  # loaded already: an event loop runs this

        await asyncio.sleep(seconds)


clock = Clock()


def now() -> float:
    return clock.time()
