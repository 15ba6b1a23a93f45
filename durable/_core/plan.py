"""How a plan runs: a plan is a generator that yields what it needs done
(call user code, pause); `drive_sync` and `drive_async` do it, so one
body of logic serves sync and async callers. Also the graceful stop state
that signal handlers set, and pausing on the clock (`_storage.clock`)."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .._errortext import warn
from .._frozen import Compared, dataclass
from .._storage import clock as clocks
from ..errors import Stopped
from .shown import for_user

if TYPE_CHECKING:  # a sync run never loads asyncio (tests/test_import_time.py)
    import asyncio

T = TypeVar("T")


class StopState:
    """Set by `request_stop()` (from any thread or a signal handler); read
    at safe points of every run. `requested` is the one flag checked there:
    a plain attribute read, so the per-operation cost stays nil."""

    def __init__(self) -> None:
        self.requested = False
        self.signum: int | None = None  # the signal that asked, if one did
        self.pausing = False  # the main thread sleeps in a durable pause
        self.waiting = 0  # calls waiting for another holder's lease (`waiting.acquire`)
        # Futures that async pauses wait on, with their loops: a signal wakes them.
        self.wakers: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def wake(self) -> None:
        for loop, waker in list(self.wakers):
            loop.call_soon_threadsafe(_settle, waker)


def _settle(waker: asyncio.Future[None]) -> None:
    if not waker.done():
        waker.set_result(None)


stop = StopState()


def request_stop(signum: int | None = None) -> None:
    """Ask every run in this process to stop at its next safe point. Only
    sets flags and schedules wake-ups of async pauses, so it is safe from
    any thread and from a signal handler."""
    if signum is not None:
        stop.signum = signum
    stop.requested = True
    stop.wake()


def clear_stop() -> None:
    stop.requested, stop.signum = False, None


def check_stop() -> None:
    if stop.requested:
        raise Stopped(stop.signum)


def warn_if_stopping() -> None:
    """At a run's start. A stop asked for earlier (a drain, a Ctrl-C under
    `stop_on_signals()`, a notebook cell) stands until `clear_stop()`: the
    run stops before its first operation with `Stopped`, a SystemExit that,
    uncaught, exits 130 without a word of why."""
    if stop.requested:
        warn(
            "durable: a stop was requested in this process (durable.request_stop(), or a "
            "signal under stop_on_signals()) and still stands, so this run stops before its "
            "first operation; call durable.clear_stop() to let runs start again",
            RuntimeWarning,
        )


class Look(NamedTuple):
    """What a pause in a run looks at while it waits (`fn`: its cancel
    marker; raises to end the pause), once per `every` seconds."""

    every: float
    fn: Callable[[], None]


def pause(
    seconds: float,
    sleep: Callable[[float], object] | None = None,
    look: Look | None = None,
    *,
    stops: bool = True,
) -> None:
    """Wait on the clock (`sleep`: on real time, another holder's lease). A
    graceful stop ends the wait: at once when the main thread waits (nothing
    is in flight, so the signal handler raises `Stopped` there), else when
    the wait is over. `look` ends it when it raises. `stops=False`: a wait
    inside an operation that finishes first (an item's retry delay in a
    `loop_over` block without checkpoints), which a stop does not end."""
    if stops:
        check_stop()
    main = stops and threading.current_thread() is threading.main_thread()
    if main:
        stop.pausing = True
    try:
        for part in _parts(seconds, look if sleep is None else None):
            (sleep or clocks.clock.sleep)(part)
            if stops:
                check_stop()
    finally:
        if main:
            stop.pausing = False
    if stops:
        check_stop()


def _parts(seconds: float, look: Look | None) -> Generator[float, None, None]:
    """`seconds` in parts of at most `look.every`, `look` made between two:
    a cancel of a run sleeping for an hour took effect after the hour. A
    clock whose sleeps return at once (a test's) has nothing to cut short:
    one part, as its `slept` shows."""
    if look is None or not clocks.clock.waits:
        yield seconds
        return
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        yield min(left, look.every)
        if end > time.monotonic():
            look.fn()


async def apause(
    seconds: float, real: bool = False, look: Look | None = None, *, stops: bool = True
) -> None:
    """`pause` for a coroutine (`real`: on real time, not the durable
    clock): a graceful stop wakes it at once (unless `stops=False`, as `pause`)."""
    import asyncio  # loaded already: an event loop runs this

    if stops:
        check_stop()
    loop = asyncio.get_running_loop()
    entry = (loop, loop.create_future())  # never woken when not a waker
    if stops:
        stop.wakers.append(entry)
    try:
        for part in _parts(seconds, None if real else look):
            sleeping = asyncio.ensure_future((asyncio.sleep if real else clocks.clock.asleep)(part))
            try:
                await asyncio.wait([entry[1], sleeping], return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeping.cancel()
            if stops:
                check_stop()
    finally:
        if stops:
            stop.wakers.remove(entry)
    if stops:
        check_stop()


@dataclass
class Call(Compared):
    """Call `fn(*args, **kwargs)`, inside `enter()`'s context when given."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    enter: Callable[[], Callable[[], None]] | None = None


@dataclass
class Pause(Compared):
    """A pause of `seconds` in a run (a retry's delay); `look` checks for a cancel."""

    seconds: float
    look: Look | None = None  # a run's pause looks for its cancel marker


@dataclass
class Wait(Compared):
    """Wait `seconds` of real time for something outside the run (another
    holder's lease): not the durable clock, so `fake_clock()` does not
    shorten it; an async caller awaits it without blocking its loop, where
    the holder may be another task."""

    seconds: float


Plan = Generator["Call | Pause | Wait", Any, T]


def raised(e: BaseException) -> BaseException:
    """What user code raised, when e is the RuntimeError that a StopIteration
    it raised became on its way out of a plan's generator (PEP 479: thrown
    into a plan and let through); else e."""
    cause = e.__cause__
    if type(e) is RuntimeError and isinstance(cause, StopIteration):
        return cause if str(e) == "generator raised StopIteration" else e
    return e


def drive_sync(plan: Plan[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                req = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            except RuntimeError as e:
                if error is not None and raised(e) is error:  # the caller gets the step's own
                    raise error from None
                raise
            send, error = None, None
            try:
                if isinstance(req, Wait):  # nothing in flight: a stop ends it
                    pause(req.seconds, time.sleep)
                    continue
                if isinstance(req, Pause):
                    pause(req.seconds, look=req.look)
                    continue
                reset = None
                try:  # entered first: a Ctrl-C right after `enter` still resets
                    reset = req.enter() if req.enter else None
                    send = req.fn(*req.args, **req.kwargs)
                finally:
                    if reset:
                        _undo(reset)
            except BaseException as e:
                error = e
    except BaseException as e:
        settle(plan, e)
        if for_user(e):
            raise e  # durable's own frames left out of this traceback: DURABLE_TRACEBACK=full shows them
        raise


def named(coro: Coroutine[Any, Any, T], name: str) -> Coroutine[Any, Any, T]:
    """`coro` under the name a call missing its `await` is warned with
    ("coroutine 'fetch' was never awaited"): the user's call, not durable's
    driver that makes the coroutine ('drive_async')."""
    coro.__qualname__ = name  # type: ignore[attr-defined]
    return coro


async def drive_async(plan: Plan[T]) -> T:
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                req = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            send, error = None, None
            try:
                if isinstance(req, Wait):  # nothing in flight: a stop ends it
                    await apause(req.seconds, real=True)
                    continue
                if isinstance(req, Pause):
                    await apause(req.seconds, look=req.look)
                    continue
                reset = None
                try:  # entered first: a Ctrl-C right after `enter` still resets
                    reset = req.enter() if req.enter else None
                    send = req.fn(*req.args, **req.kwargs)
                    if inspect.isawaitable(send):
                        send = await send
                finally:
                    if reset:
                        _undo(reset)
            except BaseException as e:
                error = e
    except BaseException as e:
        settle(plan, e)
        if for_user(e):
            raise e  # durable's own frames left out of this traceback: DURABLE_TRACEBACK=full shows them
        raise


def _undo(reset: Callable[[], object]) -> None:
    """Run a request's reset; a Ctrl-C landing in it runs it again whole
    (every reset may be re-run): a run left half-set would stay set."""
    try:
        reset()
    except KeyboardInterrupt:
        reset()
        raise


def settle(plan: Plan[Any], e: BaseException) -> None:
    """An exception that left a driver between two of the plan's requests
    (a Ctrl-C landing after `plan.send` returned, or at the loop's jump back)
    finds the plan suspended, still holding its run's lease until something
    collects it; a notebook keeps the traceback, and with it the plan. It
    gets the exception as a step's call would: the run ends interrupted and
    its lease goes now."""
    if inspect.getgeneratorstate(plan) != inspect.GEN_SUSPENDED:
        return  # it raised this itself (it is closed), or never started
    try:
        plan.throw(e)
    except BaseException:
        return
    plan.close()  # it asked for more: it is never driven again
