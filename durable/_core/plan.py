"""How a plan runs: a plan is a generator that yields what it needs done
(call user code, pause); `drive_sync` and `drive_async` do it. Also the
engine's clock (swapped by `durable.testing.fake_clock`) and the graceful
stop state that signal handlers set."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class Stopped(SystemExit):
    """A graceful stop (`durable.stop_on_signals()`): raised at the first safe
    point after the signal, i.e. once the step in flight is recorded. A
    SystemExit, so an uncaught one exits with the conventional 128 + signal
    code, and the workflow marks the run `interrupted`."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


class StopState:
    """Set from a signal handler; read at safe points of every run."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.pausing = False  # the main thread sleeps in a durable pause
        # Futures that async pauses wait on, with their loops: a signal wakes them.
        self.wakers: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def wake(self) -> None:
        for loop, waker in list(self.wakers):
            loop.call_soon_threadsafe(_settle, waker)


def _settle(waker: asyncio.Future[None]) -> None:
    if not waker.done():
        waker.set_result(None)


stop = StopState()


def check_stop() -> None:
    if stop.signum is not None:
        raise Stopped(stop.signum)


class Clock:
    """Time as the engine sees it; `durable.testing.fake_clock` swaps it."""

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        check_stop()
        # A pause holds nothing in flight: the signal handler may end it at once.
        main = threading.current_thread() is threading.main_thread()
        if main:
            stop.pausing = True
        try:
            time.sleep(seconds)
        finally:
            if main:
                stop.pausing = False
        check_stop()

    async def asleep(self, seconds: float) -> None:
        check_stop()
        loop = asyncio.get_running_loop()
        entry = (loop, loop.create_future())
        stop.wakers.append(entry)
        try:
            # Ends after `seconds`, or at once when a graceful stop arrives.
            await asyncio.wait([entry[1]], timeout=seconds)
        finally:
            stop.wakers.remove(entry)
        check_stop()


clock = Clock()


def now() -> float:
    return clock.time()


@dataclass
class Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    enter: Callable[[], Callable[[], None]] | None = None


@dataclass
class Pause:
    seconds: float


Plan = Generator["Call | Pause", Any, T]


def drive_sync(plan: Plan[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            if isinstance(req, Pause):
                clock.sleep(req.seconds)
                continue
            reset = req.enter() if req.enter else None
            try:
                send = req.fn(*req.args, **req.kwargs)
            finally:
                if reset:
                    reset()
        except BaseException as e:
            error = e


async def drive_async(plan: Plan[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send, error = None, None
        try:
            if isinstance(req, Pause):
                await clock.asleep(req.seconds)
                continue
            reset = req.enter() if req.enter else None
            try:
                send = req.fn(*req.args, **req.kwargs)
                if inspect.isawaitable(send):
                    send = await send
            finally:
                if reset:
                    reset()
        except BaseException as e:
            error = e
