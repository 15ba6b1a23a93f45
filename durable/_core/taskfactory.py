"""The task factory that numbers asyncio tasks (DESIGN §2 "Positions in
async code"): installed on the running loop while an async run is active
(`enter_root`), it gives each task created by a scope's owner that scope's
child, so that a task's operations are numbered by creation order, which is
program order. Installed once per loop however many runs share it, chained
to any factory that was there, and put back when the last run leaves. The
run ends only once the tasks it numbered have ended (`settling`)."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Awaitable, Callable
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from .._frozen import Compared, dataclass
from ..errors import ControlFlow, Stopped
from .context import active_or_unset
from .scope import RunState, Scope, _asyncio, current_task, scope_var, set_scope

if TYPE_CHECKING:
    import asyncio


def enter_root(run: RunState) -> Callable[[], None]:
    """The body's scope, and the task factory on the running loop, if any."""
    task = current_task()
    outside = task is None
    reset = set_scope(Scope(run, (), task, claimable=outside, thread_may_use=outside))
    loop = _running_loop()
    if loop is None:
        return reset
    _install(loop)
    left: list[bool] = []

    def leave() -> None:  # may be run again (`plan.drive_sync`): uninstalls once
        reset()
        if not left:
            left.append(True)  # first: a factory left installed only numbers no task
            _uninstall(loop)

    return leave


@dataclass
class _Installed(Compared):
    """Our task factory on a loop, the one it chained to, and the runs using it."""

    factory: Callable[..., Any]
    previous: Callable[..., Any] | None
    runs: int = 0


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Installed] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    aio = _asyncio()
    loop: asyncio.AbstractEventLoop | None = None if aio is None else aio._get_running_loop()
    return loop


def _install(loop: asyncio.AbstractEventLoop) -> None:
    with _lock:
        entry = _loops.get(loop)
        current_factory = loop.get_task_factory()
        if entry is None or current_factory is not entry.factory:
            # Chain to whatever factory is there now (the user's, or ours replaced by theirs).
            factory = _make_factory(current_factory)
            loop.set_task_factory(factory)
            entry = _Installed(factory, current_factory, entry.runs if entry else 0)
            _loops[loop] = entry
        entry.runs += 1


def _uninstall(loop: asyncio.AbstractEventLoop) -> None:
    with _lock:
        entry = _loops.get(loop)
        if entry is None:
            return
        entry.runs -= 1
        if entry.runs > 0:
            return
        del _loops[loop]
        if loop.get_task_factory() is entry.factory:  # still ours: put back what was there
            loop.set_task_factory(entry.previous)


def _make_factory(previous: Callable[..., Any] | None) -> Callable[..., Any]:
    def durable_task_factory(
        loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
    ) -> asyncio.Future[Any]:
        parent = scope_var.get()
        # Tasks of a step body (no run active: `context.entered_step` leaves the
        # scope) or a loop block (no scope), of a finished run, or made by code
        # that may not number here take no index: creation order is program
        # order only for the scope's own task.
        if (
            parent is None
            or active_or_unset() is None
            or not parent.run.open
            or not parent.owned_here()
        ):
            return _spawn(previous, loop, coro, kwargs)
        creator = _unordered_creator()
        child = parent.child() if creator is None else parent.unordered_child(creator)
        context = kwargs.get("context")
        if context is not None:  # 3.11+: the task runs in the context given
            try:
                context.run(scope_var.set, child)
            except RuntimeError:  # a context in use elsewhere: the task fails closed later
                return _spawn(previous, loop, coro, kwargs)
            task = _spawn(previous, loop, _contained(coro, parent.run), kwargs)
        else:  # the task copies the current context: put the child scope in it for now
            token = scope_var.set(child)
            try:
                task = _spawn(previous, loop, _contained(coro, parent.run), kwargs)
            finally:
                scope_var.reset(token)
        child.bind(task)
        tasks = parent.run.tasks  # the run waits for it before it ends (`settling`)
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return task

    return durable_task_factory


def _unordered_creator() -> str | None:
    """The asyncio function making the task being created now, when it makes
    its tasks in the order of a set: `asyncio.as_completed` (and 3.10's
    `asyncio.wait`) wrap coroutines with `{ensure_future(f) for f in set(fs)}`.
    Found as the first frame above this factory that is not asyncio's way
    to it (create_task, ensure_future), which is the caller's own code for
    create_task, gather or a TaskGroup."""
    passing, makers = _UNORDERED or _unordered_codes()
    # Above the factory and the loop's create_task (none with uvloop's: then
    # one of asyncio's frames is skipped, not the caller's). One frame object
    # made for most tasks, a few for gather: about 1 us a task.
    frame: FrameType | None = sys._getframe(3)
    while frame is not None and frame.f_code in passing:
        frame = frame.f_back
    return None if frame is None else makers.get(frame.f_code)


# (asyncio's frames between a maker and the factory, {maker's frames: its name})
_UNORDERED: list[Any] = []


def _unordered_codes() -> tuple[set[CodeType], dict[CodeType, str]]:
    import asyncio.base_events as events  # loaded already: its loop is calling the factory
    import asyncio.tasks as tasks

    passing = {events.BaseEventLoop.create_task.__code__, tasks.ensure_future.__code__}
    inner = getattr(tasks, "_ensure_future", None)  # 3.10, 3.11
    if inner is not None:
        passing.add(inner.__code__)
    found: dict[str, Any] = {"asyncio.as_completed": tasks.as_completed, "asyncio.wait": tasks.wait}
    iterator = getattr(tasks, "_AsCompletedIterator", None)  # 3.13+
    if iterator is not None:
        found["asyncio.as_completed"] = iterator.__init__
    makers: dict[CodeType, str] = {}
    for creator, fn in found.items():
        makers[fn.__code__] = creator
        for const in fn.__code__.co_consts:  # the set comprehension, a frame of its own before 3.12
            if isinstance(const, CodeType) and const.co_name == "<setcomp>":
                makers[const] = creator
    _UNORDERED[:] = [passing, makers]
    return passing, makers


def _spawn(
    previous: Callable[..., Any] | None,
    loop: asyncio.AbstractEventLoop,
    coro: Any,
    kwargs: dict[str, Any],
) -> asyncio.Future[Any]:
    if previous is not None:
        return previous(loop, coro, **kwargs)  # type: ignore[no-any-return]
    import asyncio  # loaded already: its loop is calling this factory

    return asyncio.Task(coro, loop=loop, **kwargs)


class _StoppedInTask(ControlFlow):
    """A graceful stop met in one of the run's tasks, on its way to the body
    (through `asyncio.gather`, or whatever awaits the task). `Stopped` is a
    SystemExit, which asyncio lets out of the event loop at once; asyncio.run
    then cancelled the run's other steps mid-body, unrecorded though they had
    run, and a resume ran them again. As a plain BaseException it ends only
    its task; the body settles (the steps in flight finish and are recorded)
    and raises the `Stopped` itself."""

    def __init__(self, stopped: Stopped) -> None:
        super().__init__(stopped.code)
        self.stopped = stopped


# id(run) -> the first stop met in one of its tasks, until its body ends: a
# body that swallowed it (`gather(..., return_exceptions=True)`) still stops.
_STOPS: dict[int, Stopped] = {}


def _contained(coro: Any, run: RunState) -> Any:
    """coro, as a coroutine whose `Stopped` ends only its task. It keeps the
    coroutine's names, which a user's task factory or a task's repr shows."""
    wrapper: Any = _contain(coro, run)
    wrapper.__name__ = getattr(coro, "__name__", wrapper.__name__)
    wrapper.__qualname__ = getattr(coro, "__qualname__", wrapper.__qualname__)
    return wrapper


async def _contain(coro: Any, run: RunState) -> Any:
    try:
        return await coro
    except Stopped as e:
        _STOPS.setdefault(id(run), e)
        raise _StoppedInTask(e) from e


def _stop_in(e: BaseException) -> Stopped | None:
    """The graceful stop e carries from a task: alone (`asyncio.gather`), or
    in an exception group (a `TaskGroup`, 3.11+), where a stop wins over the
    other tasks' errors, as it does when it reaches the body first."""
    if isinstance(e, _StoppedInTask):
        return e.stopped
    subgroup = getattr(e, "subgroup", None)  # a BaseExceptionGroup
    found = subgroup(_StoppedInTask) if subgroup is not None else None
    while found is not None and not isinstance(found, _StoppedInTask):
        found = found.exceptions[0]  # a group nested in the group
    return None if found is None else found.stopped


def settling(fn: Callable[..., Awaitable[Any]], run: RunState) -> Callable[..., Awaitable[Any]]:
    """An async body that ends only once the tasks numbered for its run have
    ended, as a `TaskGroup` waits for its children: a step still running
    when the body returned or raised (the others of an `asyncio.gather` that
    one step's exception ended, a task never awaited) records its output
    while the run is open. After the run ends nothing may write into it
    (`replay.commit`), and a resume would execute that step again."""

    async def body(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                value = await fn(*args, **kwargs)
            except BaseException as e:
                # A cancelled or interrupted body cancels them (they record
                # nothing); any other end, a suspend or graceful stop included,
                # waits for them: each stops at its next operation or records it.
                stop = _stop_in(e)
                ended = isinstance(e, (Exception, ControlFlow))
                await _settle(run, cancel=stop is None and not ended)
                if stop is None and isinstance(e, Exception):  # after a stop it swallowed
                    stop = _STOPS.get(id(run))
                if stop is not None:  # every task has ended: the stop is the run's now
                    raise stop from None
                raise
            await _settle(run, cancel=False)
            stop = _STOPS.get(id(run))
            if stop is not None:  # never a value made of a task's stop: the run stops
                raise stop from None
            return value
        finally:
            _STOPS.pop(id(run), None)

    return body


async def _settle(run: RunState, *, cancel: bool) -> None:
    import asyncio  # loaded already: an event loop runs this

    while run.tasks:  # a task waited for may create more
        pending = list(run.tasks)
        if cancel:
            for task in pending:
                task.cancel()
        try:
            await asyncio.wait(pending)
        except BaseException:  # cancelled while waiting (Ctrl-C): the run ends now
            for task in pending:
                task.cancel()
            raise
