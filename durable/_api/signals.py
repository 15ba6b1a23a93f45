"""Graceful stop (drain): `request_stop()` from any thread or signal
handler, `stop_requested()`, and `stop_on_signals()` built on them.

A request only raises a flag: the step in flight finishes and is recorded,
then the engine raises `Stopped` at its next safe point, the workflow marks
the run `interrupted` and releases the lease. Under `stop_on_signals()`, if
nothing is in flight (the main thread sleeps in a durable pause) the stop is
immediate, and so is a second signal."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable
from types import FrameType, TracebackType

from .._core import plan
from ..errors import ConfigurationError, Stopped

_Handler = signal.Handlers | int | None | object


def request_stop() -> None:
    """Ask every run in this process to stop gracefully: each finishes and
    records the step in flight, then raises `durable.Stopped` and is marked
    `interrupted` (resume it later). Safe from any thread and from a signal
    handler: it only sets a flag. The request stays until `clear_stop()`, so
    no new run starts meanwhile either."""
    plan.request_stop()


def stop_requested() -> bool:
    """Whether a graceful stop was requested (and not cleared): long step
    bodies may poll it to cut their own work short."""
    return plan.stop.requested


def clear_stop() -> None:
    """Withdraw a stop request, e.g. before resuming in the same process."""
    plan.clear_stop()


class SignalStop:
    """Installed handlers; `restore()` (or leaving the `with` block) puts the
    previous ones back and clears a pending stop."""

    def __init__(self, signums: Iterable[int]) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise ConfigurationError(
                "stop_on_signals() must be called from the main thread (Python delivers "
                "signals there only)"
            )
        self._previous: dict[int, _Handler] = {}
        for signum in _checked(signums):  # all checked first: none installed for a bad list
            self._previous[signum] = signal.signal(signum, _on_signal)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            # None: a handler installed from C (faulthandler's, an embedding
            # program's), which Python cannot install again; passing it
            # raised TypeError and left the other signals ours. The signal
            # gets its default action: ours left in place would keep turning
            # it into a stop request no run is there to take.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # type: ignore[arg-type]
        self._previous.clear()
        plan.clear_stop()

    def __enter__(self) -> SignalStop:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()


def _checked(signums: object) -> list[int]:
    """The signal numbers, or a ConfigurationError saying what the call takes."""
    listed = isinstance(signums, Iterable) and not isinstance(signums, (str, bytes))
    given = list(signums) if listed else []  # type: ignore[call-overload]
    valid = signal.valid_signals()
    if not listed or any(type(s) is bool or not isinstance(s, int) or s not in valid for s in given):
        raise ConfigurationError(
            "stop_on_signals() takes signal numbers, as a list (e.g. [signal.SIGINT, "
            f"signal.SIGTERM]), not {signums!r}"
        )
    return given


def stop_on_signals(
    signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM),
) -> SignalStop:
    """Opt in to graceful stop: on the first SIGINT/SIGTERM the step in flight
    finishes and is recorded, the run is marked `interrupted` and the process
    exits with 130 (SIGINT) or 143 (SIGTERM); a second signal stops at once.
    `durable run` does this for you. Returns a handle whose `restore()` (or
    `with` block) reinstates the previous handlers."""
    return SignalStop(signals)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    first = plan.stop.signum is None
    plan.request_stop(signum)
    if not first or plan.stop.pausing:
        raise Stopped(signum, at_once=not first)  # a second one: maybe in a step (`durable show`)
    name = signal.Signals(signum).name
    # os.write, not print: print is not safe to re-enter from a signal handler.
    doing = (
        "ending the wait for the run's lease"
        if plan.stop.waiting
        else "finishing the step in flight, then stopping"
    )
    os.write(2, f"durable: {name} received; {doing} (send {name} again to stop at once)\n".encode())
