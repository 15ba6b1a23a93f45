"""The event stream: what the engine tells whoever listens (logging,
OpenTelemetry, progress bars, users' `durable.on_event` callbacks).

Events are small frozen dataclasses. Run-level events (once per run) are
always built; per-operation events only when `detailed()`, asked as each run
begins, says someone wants them, so a step costs nothing extra when nobody
listens. A callback that raises is logged once at WARNING under the
`durable` logger (and warned about once) and ignored from then on:
observing a run never breaks it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import field
from types import TracebackType
from typing import TypeVar

from .._errortext import warn
from .._frozen import Frozen, dataclass, made
from .._valuetext import error_message


def _now() -> float:
    return time.time()


# One __setattr__, __delattr__, __eq__, __hash__ and __repr__ for the 16
# events (`frozen`: the generated ones, compiled for each, cost more than
# the rest of this module as it was imported, in every process).
@dataclass(frozen=True)
class Event(Frozen):
    """What every event carries. Outside a run (a plain `loop_over`),
    `run_id` and `workflow` are empty strings."""

    run_id: str
    workflow: str
    time: float = field(default_factory=_now, kw_only=True)


@dataclass(frozen=True)
class RunStarted(Event):
    """The run's first operation executes now (or the run ends without one).
    `resumed`: an earlier attempt of this run exists; `replayed` counts the
    operations replayed before the first live one, and `resume_position` is
    that one's 0-based top-level position (None when nothing replayed, or
    everything did, as `Run.resumed_from_step`); `steps_total` is the number of top-level
    operations of the previous completed attempt or the fork source, when
    known (`Run.steps_total`, `RunInfo.steps_total`; for a progress bar)."""

    resumed: bool
    resume_position: int | None
    replayed: int
    steps_total: int | None = None
    parent: str | None = None  # the parent's run id, for a child run
    started: float = 0.0  # when this call began (time.time())


@dataclass(frozen=True)
class OperationEvent(Event):
    """One operation at one position: a step, a `loop_over` block (kind
    "loop"), a sleep or a child run (kind "workflow"). `attempt` is the try
    (0 first); `duration` is in seconds (0 for a replay)."""

    position: str
    name: str
    attempt: int = 0
    fingerprint: str = ""
    duration: float = 0.0
    kind: str = "step"


@dataclass(frozen=True)
class StepExecuted(OperationEvent):
    """The operation ran and its record was written. `again`: why a record
    it had was not replayed ("artifact data.txt changed"), else None."""

    again: str | None = None


@dataclass(frozen=True)
class StepReplayed(OperationEvent):
    """The operation's recorded output was returned without running it."""


@dataclass(frozen=True)
class StepRetried(OperationEvent):
    """Try `attempt` failed with `error`; the next try starts after `delay` s.
    `attempt` counts the run's tries at the position, earlier calls' too;
    `call_attempt` (0 first) is the try of this call's retry budget, which
    allows `max_attempts` (`retries` + 1): a call after one that gave up
    starts a budget of its own, one resumed after a crash goes on with its."""

    error: str = ""
    delay: float = 0.0
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    call_attempt: int = 0
    max_attempts: int = 1


@dataclass(frozen=True)
class StepFailed(OperationEvent):
    """Try `attempt` failed with `error` and no try follows (`call_attempt`
    and `max_attempts` as `StepRetried`'s)."""

    error: str = ""
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    call_attempt: int = 0
    max_attempts: int = 1


@dataclass(frozen=True)
class BlockProgress(Event):
    """Where a `loop_over` block stands: sent when it starts (`done` counts
    items restored from checkpoints), after each item, and once `finished`."""

    name: str
    position: str
    done: int
    total: int
    failed: int = 0
    restored: int = 0
    finished: bool = False


@dataclass(frozen=True)
class RunCompleted(Event):
    """`recorded`: the run had completed before; its recorded result was
    returned without running the body."""

    replayed: int = 0
    executed: int = 0
    recorded: bool = False


def recorded_completion(run_id: str, workflow: str) -> RunCompleted:
    """`RunCompleted(run_id, workflow, recorded=True)`, made at every call of
    a completed run without a Python `__setattr__` call a field (`made`)."""
    return made(RunCompleted, run_id, workflow, _now(), 0, 0, True)


@dataclass(frozen=True)
class RunSuspended(Event):
    """The run suspended (`durable.suspend`, an input it waits for): `reason` says why."""

    reason: str = ""


@dataclass(frozen=True)
class RunFailed(Event):
    """The run ends failed (or refused: a changed definition...); calling
    it again resumes it."""

    error: str = ""
    exception: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RunInterrupted(Event):
    """Ctrl-C, SIGTERM (graceful stop) or another BaseException ended the run."""

    error: str = ""
    exception: BaseException | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RunCancelled(Event):
    """The run was cancelled (`durable cancel`, `Workflow.cancel`) and ends
    `cancelled`: only a restart runs it again."""


# Every way a run's call ends, for each consumer that closes or rewrites
# something then: the progress file and the progress bars kept copies of
# their own, which missed `RunCancelled`.
ENDS = (RunCompleted, RunSuspended, RunFailed, RunInterrupted, RunCancelled)


@dataclass(frozen=True)
class RunRebased(Event):
    """The definition changed and the run replays its records anyway."""

    old_fingerprint: str = ""
    new_fingerprint: str = ""


@dataclass(frozen=True)
class LeaseTakenOver(Event):
    """The run was left `running` by a process that is gone (killed, crashed);
    this process took its lease over and continues it."""


@dataclass(frozen=True)
class RunWaiting(Event):
    """Another process holds the run and this call waits for its lease
    (`with_options(wait=)`, `durable run --wait`): sent once, when the wait
    begins. `holder` ("pid N on HOST"), `since` and `expires` are its lease's;
    `wait` the seconds this call waits at most."""

    holder: str = ""
    since: float = 0.0
    expires: float = 0.0
    wait: float = 0.0


Callback = Callable[[Event], None]
Gate = Callable[[], bool]
T = TypeVar("T")

_log = logging.getLogger("durable")
_lock = threading.Lock()
# Copy-on-write tuples: emit() reads them without the lock.
_callbacks: tuple[Callback, ...] = ()
_gates: tuple[Gate, ...] = ()
_always = 0  # subscribers that want every per-operation event
_broken: set[int] = set()  # ids of callbacks that raised once: ignored since


def _always_on() -> bool:
    return True


class Subscription:
    """What `subscribe` returns: `close()` (or leaving the `with` block)
    unsubscribes. Closing twice is harmless."""

    def __init__(self, callback: Callback, gate: Gate | None) -> None:
        self.callback = callback
        self.gate = gate
        self.closed = False

    def close(self) -> None:
        global _callbacks, _gates, _always
        with _lock:
            if self.closed:
                return
            self.closed = True
            _callbacks = _without(_callbacks, self.callback)
            if self.gate is None:
                _always -= 1
            else:
                _gates = _without(_gates, self.gate)
            _broken.discard(id(self.callback))

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _without(items: tuple[T, ...], one: T) -> tuple[T, ...]:
    out = list(items)
    out.remove(one)
    return tuple(out)


def subscribe(callback: Callback, *, gate: Gate | None = None) -> Subscription:
    """Call `callback(event)` for every event. `gate`, for the built-in
    consumers, says when per-operation events are wanted (the logging
    consumer: only when the `durable` logger shows DEBUG); without one, all are."""
    global _callbacks, _gates, _always
    with _lock:
        _callbacks = (*_callbacks, callback)
        if gate is None:
            _always += 1
        else:
            _gates = (*_gates, gate)
    return Subscription(callback, gate)


def on_event(callback: Callback) -> Subscription:
    """Call `callback(event)` for every event the engine emits (see
    `durable.events`). Returns a handle: `handle.close()` unsubscribes, and
    `with durable.on_event(cb):` unsubscribes when the block ends. A callback
    that raises is logged once at WARNING and ignored after that."""
    if not callable(callback):
        raise TypeError(f"on_event() takes a callable, not {type(callback).__qualname__}")
    return subscribe(callback)


def detailed() -> bool:
    """Whether per-operation events (steps, items) are wanted now."""
    if _always:
        return True
    for gate in _gates:
        if gate():
            return True
    return False


def emit(event: Event) -> None:
    for callback in _callbacks:
        if id(callback) in _broken:
            continue
        try:
            callback(event)
        except Exception as e:
            _broken.add(id(callback))
            _log.warning(
                "durable: event callback %r raised on %s; it is ignored from now on",
                callback,
                type(event).__name__,
                exc_info=True,
            )
            _warn_broken(callback, event, e)


def _warn_broken(callback: object, event: Event, e: Exception) -> None:
    # The logger has only a NullHandler unless the program set one up
    # (DURABLE_LOG): the log alone left a broken callback unseen. Under
    # `-W error` the warning is an exception, which must not end the run.
    try:
        warn(
            f"durable: event callback {callback!r} raised {type(e).__name__}: {error_message(e)} on "
            f"{type(event).__name__}; it is ignored from now on (DURABLE_LOG=warning "
            "shows the traceback)",
            RuntimeWarning,
        )
    except Exception:
        pass
