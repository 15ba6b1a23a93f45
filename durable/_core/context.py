"""The live run: the engine's mutable `RunState`, held in ContextVars so that two runs in
one process (threads, asyncio tasks) never see each other's state, and `RunContext`, the
read-only view of it that `durable.current_run()` hands to user code."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import field
from typing import Any, Generic, TypeVar

from .._frozen import Compared, Frozen, dataclass
from .._storage.base import Store
from .._storage.keys import Position, call_key, format_position
from .._storage.records import Attempt
from ..errors import ConfigurationError
from .recorded import Recorded
from .runread import note
from .scope import (
    THREAD_AFTER_BODY,
    THREAD_REFUSAL,
    Scope,
    reset_vars,
    set_scope,
    take_position,
)

R = TypeVar("R")
E = TypeVar("E", bound=BaseException)


@dataclass
class RunState(Compared):
    """A run's engine state: records, counters, policy, lease. User code never gets it (`RunContext`)."""

    run_id: str
    workflow: str
    store: Store
    records: Recorded = field(default_factory=Recorded)
    failures: dict[Position, list[Attempt]] = field(default_factory=dict)
    # How many of those ended calls that gave up; the call that made the rest (`attempts`).
    given_up: dict[Position, int] = field(default_factory=dict)
    budgets: dict[Position, int] = field(default_factory=dict)  # the retries= a budget was opened with
    tried_by: dict[Position, tuple[str, str]] = field(default_factory=dict)
    failed_children: dict[Position, Any] = field(default_factory=dict)  # the runs that failed there
    # A sleep's timer: (wake-up time, digest of its duration; None in an old record).
    timers: dict[Position, tuple[float, str | None]] = field(default_factory=dict)
    items: dict[Position, dict[int, bytes]] = field(default_factory=dict)
    unkept: dict[int, Any] = field(default_factory=dict)  # persist=False outputs (`unkept`)
    kept_items: int = 0  # the item results this attempt kept (`Block._write`): its code made them
    policy: str = "refuse"
    durability: str | None = None  # the level it was given (a child takes it): None, its store's
    fingerprints: dict[int, str] = field(default_factory=dict)
    vouched: dict[int, tuple[Any, str]] = field(default_factory=dict)  # `StepSpec.check_code`
    plain: dict[int, tuple[Any, Any, str]] = field(default_factory=dict)  # `steps._plain_in`
    unreached: dict[int, tuple[Any, str]] = field(default_factory=dict)  # `fingerprint_in`
    # Positions looked up in this attempt (replayed, or live): a rerun never discards their records.
    # Kept once a position is taken from an asyncio task (`in_tasks`): until then lookups come in order.
    seen: set[Position] = field(default_factory=set)
    # Positions a rerun discarded in this attempt after the changed one: a child there runs afresh.
    discarded: set[Position] = field(default_factory=set)
    in_tasks: bool = False
    tasks: set[Any] = field(default_factory=set)  # its asyncio tasks not done (`taskfactory`)
    lease: object | None = None  # an object-store lease sets `.lost` when taken over
    created: float | None = None  # when its manifest was made (a child made before a restart: not resumed)
    killed: Callable[[Position, str], None] | None = None  # `killed.refuse_at`, until it decided
    replayed: int = 0
    executed: int = 0
    attempt: int | None = None  # its manifest's note's token, and how many records were
    committed: int = 0  # written under it: each record carries both (`noted.carry`)
    first_live: int | None = None  # top-level position of the first live operation
    open: bool = False  # True while the workflow body runs
    _root: Scope | None = field(default=None, repr=False)
    refusal: BaseException | None = None  # the first (a changed definition...): final even if caught
    child_stop: BaseException | None = None  # a child run's stop that reached the body: final too
    announced: bool = False  # RunStarted sent (`notify`): at the first live operation
    watched: bool = False  # per-operation events wanted (decided when the run begins)
    held: list[Any] = field(default_factory=list)
    intro: dict[str, Any] = field(default_factory=dict)
    arguments: str = ""  # of this attempt: a `wait_for` answer is recorded for them
    argument_values: tuple[Any, ...] = ()  # a step's closure may hold (`bound.held_by`)
    bodies: tuple[Any, ...] = ()  # `bound.Body`s whose locals a step may read
    inputs: dict[str, Any] = field(default_factory=dict)  # resume answers to `wait_for` (`inputs`)
    callers_inputs: list[dict[str, Any]] = field(default_factory=list)  # a child's: its callers' `inputs`
    awaited: frozenset[str] = frozenset()  # the waits it or a caller stopped at (`inputs`)
    caller: RunState | None = None  # a child run's parent: a cancel of it stops the child too
    cancel_due: float = float("inf")  # when (monotonic) to look for a cancel marker next

    # The next position of the scope of the code calling: `scope.take_position`.
    take_position = take_position

    def refuse(self, exc: E) -> E:
        """Remember a refusal before raising it, so that a body that catches
        it (`except Exception:`) can neither go on nor complete the run."""
        if self.refusal is None:
            self.refusal = exc
        return exc

    @property
    def position(self) -> int:
        """The body's next top-level position."""
        return self._root.next if self._root is not None else 0

    @property
    def positions(self) -> int:
        """How many top-level positions the body used so far (one that only
        created asyncio tasks counts: their operations belong to it)."""
        return self._root.extent() if self._root is not None else 0


class RunContext:
    """What code inside a run may ask about it (`durable.current_run()`):
    the run id, the workflow, the body's next position and, inside a step,
    its position, its attempt and an idempotency key. Read-only: the
    engine's state behind it cannot be changed through it."""

    __slots__ = ("_state",)
    _state: RunState

    def __init__(self, state: RunState) -> None:
        object.__setattr__(self, "_state", state)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"durable.RunContext is read-only (cannot set {name!r})")

    @property
    def run_id(self) -> str:
        return self._state.run_id

    @property
    def workflow(self) -> str:
        return self._state.workflow

    @property
    def position(self) -> int:
        """The body's next top-level position."""
        return self._state.position

    @property
    def step_index(self) -> Position | None:
        """The position of the step running now; None outside a step."""
        scope = _step_var.get()
        return scope[0] if scope else None

    @property
    def attempt(self) -> int:
        """The try of the step running now: 0 first, 1 after one failure...
        counted over the run (failed tries of earlier calls count too)."""
        scope = _step_var.get()
        return scope[1] if scope else 0

    def idempotency_key(self) -> str:
        """`"<run_id>:<position>/<digest>"`, the same on every retry and resume
        of this call (a service deduplicates its effect by it), another for
        another call there (other arguments). The digest: of the call's arguments
        (`call_key`), or of a `loop_over` item and the equal ones before it."""
        scope = _step_var.get()
        pos = None if scope is None else scope[0]  # None too where only artifacts are collected
        if scope is None or pos is None:
            raise RuntimeError("idempotency_key() is only meaningful inside a step")
        key = scope[2]  # a step call's digest is cut here, not on every call
        key = call_key(key) if type(key) is str else key
        return f"{self.run_id}:{format_position(pos)}/{key}"

    def __repr__(self) -> str:
        return f"<durable run {self.run_id!r} of {self.workflow!r}>"


@dataclass(frozen=True)
class Run(Frozen, Generic[R]):
    """The outcome of one call of a workflow. `run()`, `resume()` and `fork()`
    return completed runs only, whose value is never a missing one (`R`, not
    `R | None`); `recover()`'s runs, which may not be completed, are `Run[Any]`."""

    run_id: str
    workflow: str
    status: str
    value: R
    error: str | None
    resumed_from_step: int | None
    steps_replayed: int
    steps_executed: int
    fingerprint: str
    steps_total: int | None = None  # the body's top-level positions, when known


_run_var: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "durable_run", default=None
)
# `_active_var` never set in this context: a new thread's, or outside any run.
NOT_SET: Any = object()
# The run a durable call made here takes a position in: `_run_var`'s, except
# in a step body or a loop block (plain calls: None). One question, in C.
_active_var: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "durable_active", default=NOT_SET
)
# `active_run()` in C, as each step call starts it: NOT_SET is then asked of it.
active_or_unset: Callable[[], RunState | None] = _active_var.get


class _StartedIn(threading.local):
    # The run whose body started this thread (`threads`); a class default: cheap to miss.
    run: RunState | None = None


_started_in = _StartedIn()
# A `loop_over` item's try: (position, attempt, its `tries.ItemKey`).
ItemScope = tuple[Position, int, object]
# The step running here and where its body's artifacts go, one var (a step
# sets three, not four): (position, attempt, what its idempotency key is made
# of: the call's digest (`call_key`) or an item's key, the artifacts list);
# position and key None where only artifacts are collected (`artifacts`).
StepFrame = tuple[Position | None, int, object, list[tuple[str, str | None]] | None]
StepTokens = tuple[contextvars.Token[Any], contextvars.Token[Any]]  # `entered_step`'s
_step_var: contextvars.ContextVar[StepFrame | None] = contextvars.ContextVar(
    "durable_step", default=None
)


def current_run() -> RunContext | None:
    """The run executing here (a read-only view), or None outside a workflow."""
    state = _run_var.get()
    if state is None:
        return None
    note()  # a cached call that reads its run is not cached (`runread`)
    return RunContext(state)


def current_state() -> RunState | None:
    """The engine's state of the run executing here (never handed to users)."""
    return _run_var.get()


def active_run() -> RunState | None:
    """The run whose positions a durable call should take, None for a plain
    call (a function: a step pickled for a worker refers to it by name). In
    a thread a body started (`threads`), a refusal, final while it runs."""
    ctx = _active_var.get()
    if ctx is not NOT_SET:
        return ctx
    run: RunState | None = _started_in.run
    if run is not None:  # its body runs: this thread's work is the run's; or no record's
        text = THREAD_REFUSAL if run.open else THREAD_AFTER_BODY
        refusal = ConfigurationError(text.format(what="A durable operation", run=run.run_id))
        raise run.refuse(refusal) if run.open else refusal
    return None  # a plain thread


def caller_run() -> RunState | None:
    """`active_run`, but none in a thread that outlived the body starting it."""
    run = _started_in.run
    outlived = run is not None and not run.open and _active_var.get() is NOT_SET
    return None if outlived else active_run()


def body_run() -> RunState | None:
    """The run whose body runs here, or started this thread (never raises)."""
    ctx = _active_var.get()
    return _started_in.run if ctx is NOT_SET else ctx


def mark_thread(run: RunState | None) -> RunState | None:
    """This thread works for run's body (None: for no body); the mark before."""
    before = _started_in.run
    _started_in.run = run
    return before


def entered_step(
    position: Position, attempt: int, found: list[tuple[str, str | None]], digest: str
) -> StepTokens:
    """A step body runs from here to `left_step` of what this returns: durable
    calls in it run plainly (`enter_plain`), the artifacts it registers go to
    found; `digest`: its call's, of which its idempotency key is made. The scope
    its tasks would be numbered in is left as it is: no run is active here,
    which the task factory asks first (`taskfactory`)."""
    return (_step_var.set((position, attempt, digest, found)), _active_var.set(None))


def left_step(tokens: StepTokens) -> None:
    try:  # every step: two calls, not a loop
        _active_var.reset(tokens[1])
        _step_var.reset(tokens[0])
    except RuntimeError:  # run again after a Ctrl-C landed in it (`plan.drive_sync`)
        reset_vars(tokens)


def enter_plain(
    run: RunState | None = None, item: ItemScope | None = None, *, elsewhere: bool = False
) -> Callable[[], None]:
    """Durable calls here run plainly; tasks created here take no index.
    `run`: the run a worker thread works for (a thread starts with no
    context of its own), so that what a plain call does on the run's behalf
    (a cached step's entry) goes to its store; it takes no position in it.
    `item`: a `loop_over` item's try runs here (`current_run()` tells it).
    `elsewhere`: in another process's worker, which has no run at all: a
    worker forked from the workflow process holds a copy of the run as it
    was at the fork, whose position no longer tells anything."""
    run_token = _run_var.set(run) if run is not None or elsewhere else None
    token = _active_var.set(None)
    reset_scope = set_scope(None)
    # An item registers its artifacts where the step around it collects, else
    # for its block (`ItemKey.found`): none in another process's worker.
    frame = _step_var.get()
    found = frame[3] if frame is not None and frame[3] is not None else getattr(item and item[2], "found", None)
    step_token = _step_var.set((*item, found)) if item is not None else None

    def reset() -> None:
        if step_token is not None:
            _step_var.reset(step_token)
        reset_scope()
        _active_var.reset(token)
        if run_token is not None:
            _run_var.reset(run_token)

    return reset


def outside(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap fn so that it runs with no live run (for worker threads)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        reset = enter_plain()
        try:
            return fn(*args, **kwargs)
        finally:
            reset()

    return call
