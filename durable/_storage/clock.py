"""Time as durable sees it: the stamps on records (started, ended, created,
updated), the wake-up time of a durable sleep and the waits between
retries, all read from one clock that `durable.testing.fake_clock` swaps.

It sits with storage because every record is stamped with it and run
management, which imports storage only, compares those stamps
(`gc(older_than=...)`). Waiting as the engine does it (a graceful stop ends
a wait) is `_core.plan.pause`. Leases do not use it: other processes read
their expiry, so they need the real time."""

from __future__ import annotations

import datetime
import math
import numbers
import time

from ..errors import ConfigurationError

# The longest wait durable makes (a durable sleep, a retry delay): 10**9 s,
# about 31 years. `time.sleep` overflows past 2**63 ns (292 years), and a
# finite limit keeps every wake-up time one that a clock reaches.
MAX_WAIT = 1e9


class Clock:
    """The real clock; a test clock subclasses it (`durable.testing.FakeClock`)."""

    # Whether a sleep takes the time it is asked for: a long one is then cut
    # in parts, a run's cancel looked for between two (`_core.plan.pause`).
    waits = True

    # The C function itself: read twice a recorded step, with no Python call.
    time = staticmethod(time.time)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio  # loaded already: an event loop runs this

        await asyncio.sleep(seconds)


clock = Clock()


def now() -> float:
    return clock.time()


def check_wait(seconds: object, what: str) -> float:
    """seconds as a float, or a ConfigurationError saying what a wait takes:
    a NaN would wait nothing (a sleep recorded as done that never slept), an
    infinity or a huge number overflows the clock (on every resume)."""
    try:
        value = float(seconds) if isinstance(seconds, numbers.Real) else math.nan
    except OverflowError:  # an int past the largest float
        value = math.inf
    if 0 <= value <= MAX_WAIT:
        return value
    hint = ""
    if isinstance(seconds, datetime.timedelta):
        hint = " (for a timedelta, pass its .total_seconds())"
    raise ConfigurationError(
        f"{what} takes a finite, non-negative number of seconds, at most {MAX_WAIT:.0f} "
        f"(about 31 years), not {seconds!r}{hint}"
    )
