"""Positions in async code (DESIGN §2 "Positions in async code").

The body's operations are numbered 0, 1, 2 … in one scope. An asyncio task
created while a run is active gets a scope of its own WHEN IT IS CREATED:
its creator's prefix + (the creator's next position, k-th task created
there), and its operations are numbered inside it (`2.0.0`, `2.0.1`,
`2.1.0`). Creation order is program order, so the numbering does not depend
on which task finishes first (replayed steps return at once, live ones do
not). A task factory installed on the running loop while an async run is
active does this (`taskfactory`); whatever it did not see fails closed at
its first operation instead of taking a position that could differ on a
resume."""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from .._storage import log
from .._storage.keys import Position, PositionPath
from .._storage.log import process_id
from ..errors import ConfigurationError

if TYPE_CHECKING:
    import asyncio

_SUPPORTED = (
    "Supported ways: `await` steps in the workflow body or in asyncio tasks created inside it "
    "(asyncio.gather, asyncio.create_task, TaskGroup), or durable.loop_over(fn, items, "
    "executor=...) for blocking functions."
)

THREAD_REFUSAL = (
    "{what} was called from another thread than the one running run {run!r} "
    "(a threading.Thread or ThreadPoolExecutor started in the workflow body, "
    "asyncio.to_thread, run_in_executor); its position would depend on timing, so nothing "
    "was executed or recorded, and the run cannot complete. " + _SUPPORTED + " Inside a "
    "step, threads are free: durable operations called there are plain calls."
)

# A thread the body started and left running: its work was no record's, and
# a resume, running the body again, would start it (and run its steps) again.
THREAD_AFTER_BODY = (
    "{what} was called from a thread that the body of run {run!r} started, after its "
    "workflow body returned (suspended, failed or completed); nothing was executed. Join "
    "every thread the workflow starts before it returns. " + _SUPPORTED
)

UNORDERED_REFUSAL = (
    "{what} was called from an asyncio task that {creator}() created for a coroutine of run "
    "{run!r}: it creates its tasks in the order of a set (of memory addresses), not the order "
    "you gave, so on a resume a task could be handed the record of another; nothing was "
    "executed or recorded. Create the tasks first, in program order "
    "({creator}([asyncio.create_task(c) for c in coros])), or use asyncio.gather."
)


class RunState(Protocol):
    run_id: str
    open: bool  # False once the workflow body has returned
    in_tasks: bool  # a position was taken from an asyncio task
    tasks: set[asyncio.Future[Any]]  # the tasks numbered for it, not done yet (`taskfactory`)
    killed: Callable[[Position, str], None] | None  # `killed.refuse_at`, until it decided

    def refuse(self, exc: ConfigurationError) -> ConfigurationError: ...


def take_position(run: RunState, what: str = "a durable operation") -> Position:
    """The next position of the scope of the code calling (the body's, or the
    asyncio task's), for `run` (`context.RunState.take_position`, this very
    function: one frame a step, not two). `what` names the operation in errors
    (and `killed.CHILD`)."""
    scope = scope_var.get()  # `current()`, without a call on every step
    if scope is None or scope.run is not run:
        raise ConfigurationError(
            f"{what} was called for run {run.run_id!r} outside its workflow body; "
            "nothing was executed. Call durable operations from the body or from "
            "asyncio tasks it creates."
        )
    # A sync body on its own thread (every step of most runs) passes `_check` on these reads alone.
    if not (
        scope.task is None
        and scope.thread_may_use
        and run.open
        and threading.get_ident() == scope.thread
        and log.pid == scope.pid  # `process_id()` without a call, on every step
        and ("asyncio" not in sys.modules or current_task() is None)  # a sync run: no call
    ):
        scope._check(what)
    index = scope.next
    scope.next += 1
    pos = PositionPath((*scope.prefix, index)) if scope.prefix else index
    if run.killed is not None:  # the place a run's process died at, refused
        run.killed(pos, what)
    return pos


class Scope:
    """A numbering of operations, used by one task (or by the thread that
    runs a sync body). `task` None means "not a task": the body of a run
    started outside an event loop, or a task's scope before it is bound."""

    __slots__ = (
        "_at",
        "_made",
        "claimable",
        "next",
        "pid",
        "prefix",
        "run",
        "task",
        "thread",
        "thread_may_use",
        "unordered",
    )  # fmt: skip

    def __init__(
        self,
        run: RunState,
        prefix: tuple[int, ...],
        task: asyncio.Future[Any] | None,
        *,
        claimable: bool,
        thread_may_use: bool,
    ) -> None:
        self.run = run
        self.prefix = prefix
        self.thread = threading.get_ident()
        self.pid = process_id()  # a forked child keeps the thread's id, not the pid
        self.task = task
        self.claimable = claimable
        self.thread_may_use = thread_may_use
        self.next = 0
        self._at, self._made = -1, 0  # tasks created at position `_at` so far
        # The asyncio function that created this task (or an ancestor) in an
        # order that is not program order: every operation here is refused.
        self.unordered: str | None = None

    def extent(self) -> int:
        """The positions this scope used: those taken, and the next one if
        tasks were created there (their operations belong to it)."""
        return self.next + (self._at == self.next and self._made > 0)

    def child(self) -> Scope:
        """The scope of a task created now by this scope's owner."""
        if self.unordered is not None:  # its creation order is no more program order
            return self.unordered_child(self.unordered)
        if self._at != self.next:
            self._at, self._made = self.next, 0
        k = self._made
        self._made += 1
        return Scope(
            self.run, (*self.prefix, self.next, k), None, claimable=True, thread_may_use=False
        )

    def unordered_child(self, creator: str) -> Scope:
        """The scope of a task that `creator` makes now in the order of a set
        (`asyncio.as_completed` of coroutines): the order of their addresses
        in memory, which another process, or a resume that replays instead
        of running, does not repeat. Numbered by it, each task's first step
        could get the record of another's on a resume: its operations are
        refused instead. It takes no index, so its siblings keep theirs."""
        scope = Scope(self.run, self.prefix, None, claimable=True, thread_may_use=False)
        scope.unordered = creator
        return scope

    def bind(self, task: asyncio.Future[Any]) -> None:
        self.task, self.claimable = task, False

    def owned_here(self) -> bool:
        """Whether the code running now may number operations in this scope:
        its own task; the thread of a body started outside a loop; or, for a
        scope nobody holds, a task that may take it, which then holds it.

        A task's scope not yet bound (its coroutine started eagerly, inside
        the factory) is taken by the first task to ask: only that task's
        context holds it. The body of a sync run (`thread_may_use`) is taken
        only by a task that `loop.run_until_complete` drives (the coroutine
        of `asyncio.run(main())`), while no other holds it: the tasks main
        creates were not seen being created, and which of them asks first is
        timing, so every one of them is refused, even the first (a record it
        took could be another's on a resume). main's operations are numbered
        in the body's scope one after another, as the body's own are."""
        if threading.get_ident() != self.thread:
            return False
        task = current_task()
        if task is not None and task is self.task:
            return True
        free = self.task is None or self.task.done()
        if free and task is None:
            return self.thread_may_use
        if free and task is not None and self.claimable:
            if self.thread_may_use and not _driven(task):
                return False
            self.task = task
            return True
        return False

    def _check(self, what: str) -> None:
        run_id = self.run.run_id
        if not self.run.open:
            raise ConfigurationError(
                f"{what} was called for run {run_id!r} after its workflow body returned "
                "(from an asyncio task that outlived it?); nothing was executed. Await every "
                "task the workflow creates before it returns."
            )
        if process_id() != self.pid:
            raise ConfigurationError(
                f"{what} was called in a process forked from the one running run {run_id!r} "
                "(multiprocessing with the fork start method in the workflow body); only that "
                "process may record the run's steps, and positions taken in several processes "
                "would mix, so nothing was executed or recorded. Use durable.loop_over(fn, "
                "items, executor=concurrent.futures.ProcessPoolExecutor()), or start the pool "
                "inside a step (steps called there are plain calls)."
            )
        if self.unordered is not None:
            refusal = UNORDERED_REFUSAL.format(what=what, run=run_id, creator=self.unordered)
            raise ConfigurationError(refusal)
        if threading.get_ident() != self.thread:
            # Final: the run must not complete without the work of that thread.
            raise self.run.refuse(ConfigurationError(THREAD_REFUSAL.format(what=what, run=run_id)))
        if not self.owned_here():
            if self.thread_may_use:  # the body of a sync run, asked from an asyncio task
                raise ConfigurationError(
                    f"{what} was called from an asyncio task of run {run_id!r}, a sync "
                    "workflow, other than the coroutine that asyncio.run() (or "
                    "loop.run_until_complete()) runs: durable did not see that task being "
                    "created (asyncio.gather of coroutines, create_task, TaskGroup), so its "
                    "position would depend on timing; nothing was executed or recorded. Inside "
                    "a sync workflow, asyncio.run(main()) works when only main itself calls "
                    "durable operations (one after another, or the steps' own calls gathered: "
                    "asyncio.gather(fetch(a), fetch(b))); make the workflow `async def` to use "
                    "tasks."
                )
            raise ConfigurationError(
                f"{what} was called from an asyncio task of run {run_id!r} that durable did "
                "not see being created (created before the run started, on an event loop "
                "started inside a sync workflow, or while another task factory replaced "
                "durable's); its position would depend on timing, so nothing was executed or "
                f"recorded. {_SUPPORTED} Inside a sync workflow, asyncio.run(main()) works when "
                "only main itself calls durable operations; make the workflow `async def` to "
                "use tasks."
            )
        if current_task() is not None:  # lookups may now come out of position order
            self.run.in_tasks = True


scope_var: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "durable_scope", default=None
)


def current() -> Scope | None:
    return scope_var.get()


def current_task() -> asyncio.Future[Any] | None:
    aio = _asyncio()
    if aio is None:
        return None
    # Asking for the loop first: without one (a sync body, every step)
    # `current_task()` would raise, and an exception per step costs.
    loop = aio._get_running_loop()
    task: asyncio.Future[Any] | None = None if loop is None else aio.current_task(loop)
    return task


def _driven(task: asyncio.Future[Any]) -> bool:
    """Whether `loop.run_until_complete` (so `asyncio.run`, `asyncio.Runner`)
    drives task: it waits on it with a done callback of its own, asyncio's
    `_run_until_complete_cb` or uvloop's `run_until_complete.<locals>.done_cb`.
    A task gathered or awaited by another has that task's callbacks instead."""
    callbacks = getattr(task, "_callbacks", None) or ()
    for entry in callbacks:
        callback = entry[0] if isinstance(entry, tuple) else entry
        if "run_until_complete" in getattr(callback, "__qualname__", ""):
            return True
    return False


def _asyncio() -> ModuleType | None:
    """The asyncio module if something imported it, else None: no event loop
    (hence no task) can run before it is imported, so a sync run never loads
    it (tests/test_import_time.py)."""
    return sys.modules.get("asyncio")


def set_scope(scope: Scope | None) -> Callable[[], None]:
    token = scope_var.set(scope)
    return lambda: reset_vars((token,))


def reset_vars(tokens: tuple[contextvars.Token[Any], ...]) -> None:
    """`ContextVar.reset` of each, which may be run again: a Ctrl-C landing
    in the reset of what a call entered runs it again whole (`plan.drive_sync`)."""
    for token in tokens:
        try:
            token.var.reset(token)
        except RuntimeError:  # used already: this is the second time
            pass
