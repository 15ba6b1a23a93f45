"""The items of a pool's `loop_over` block waiting out their retry delay,
in the workflow process (`schedule`)."""

from __future__ import annotations

import time

from .._core.plan import Look, pause
from .._storage import clock as clocks


class Delays:
    """The items of a pool waiting their retry delay, waited here in the
    workflow process, which looks for the run's cancel meanwhile (`look`).
    A worker that waited it looked for nothing: a cancel during a two
    minutes' delay was seen after the next try. Their next try is sent
    once due, so no worker is kept waiting either."""

    def __init__(self, look: Look | None, stops: bool = True) -> None:
        self.look, self.stops = look, stops  # `stops`: `Tries.stops`
        # A test's clock, whose sleeps return at once, tells when a delay is over.
        self.now = time.monotonic if clocks.clock.waits else clocks.clock.time
        self.items: list[tuple[float, int]] = []  # (due, item index)
        self.looked = self.now()

    def add(self, index: int, wait: float) -> None:
        self.items.append((self.now() + wait, index))

    def timeout(self) -> float | None:
        """How long a wait for the tries in flight may last: until the next
        delay is over or the next look, None (no bound) when none waits."""
        if not self.items:
            return None
        until = min(self.items)[0] - self.now()
        if self.look is not None:
            until = min(until, self.looked + self.look.every - self.now())
        return max(until, 0.0)

    def pause(self) -> None:
        """Nothing in flight: wait until the first delay is over, looking as a
        step's delay does (a graceful stop ends it too)."""
        pause(max(0.0, min(self.items)[0] - self.now()), look=self.look, stops=self.stops)
        self.looked = self.now()

    def due(self) -> list[int]:
        """The items whose delay is over, by index; a look first when one is due."""
        now = self.now()
        if self.items and self.look is not None and now - self.looked >= self.look.every:
            self.looked = now
            self.look.fn()
        ready = sorted(i for at, i in self.items if at <= now)
        self.items = [(at, i) for at, i in self.items if at > now]
        return ready

    def clear(self) -> list[int]:
        """Once the block stops: no waiting item starts (as one not yet sent)."""
        self.items = []
        return []
