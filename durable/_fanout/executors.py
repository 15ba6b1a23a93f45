"""Where `loop_over` items execute: in this process, in a thread pool, in any
other `concurrent.futures.Executor` (process pools) or on a Dask cluster.

Workers only compute. An item function and its item travel to another
process as cloudpickle bytes, and the result (or the exception) comes back
the same way; the workflow process writes every record."""

from __future__ import annotations

import concurrent.futures as cf
import os
import traceback
import types
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .._core import unkept
from .._core.cacheplain import plain_plan
from .._core.context import ItemScope, RunState, current_state, enter_plain
from .._core.plan import drive_async, drive_sync
from .._core.retry import RetryPolicy
from .._core.spec import own_step_spec, step_spec
from .._core.stillheld import still_held
from .._core.tracing import item_span
from .._storage import codec
from .._storage.triesgate import gate_of, handed, trying
from .._valuetext import error_message
from ..errors import ConfigurationError, SerializationError
from .gate import Gate
from .handout import Until, hand_out, lapsed
from .orphan import leave_if_orphaned
from .outcome import unpack_outcome
from .workercode import fn_travel, item_blob, worker_fn, worker_item

# Where an item runs in the run's trace: the run span's W3C headers (None:
# no tracing) and the block's label.
Trace = tuple[dict[str, str] | None, str]
NO_TRACE: Trace = (None, "")
ONE_TRY = RetryPolicy()  # a worker makes one try; the block makes the next


def call_item(
    fn: Callable[[Any], Any],
    item: Any,
    trace: Trace = NO_TRACE,
    run: RunState | None = None,
    *,
    local: bool = True,
    scope: ItemScope | None = None,
) -> Any:
    """Make one try of one item. A step runs its body without a record of its own; its retries
    are the block's to make (`_fanout.tries`: the workflow process keeps each failed try before
    the next starts). Durable calls inside run plainly. `run`: the run a pool's thread works for
    (this process's threads share its store). A cached step uses its cache where the store is
    known: in this process (`local`), not in another process's worker. `scope`: the item's
    position, try and index in the run, as `current_run()` tells them; a try queued to a thread
    pool starts only while the run's lease holds (a worker freed after a stall past it)."""
    if trace[0]:
        with item_span(*trace):
            return call_item(fn, item, NO_TRACE, run, local=local, scope=scope)
    if run is not None and scope is not None:
        still_held(run, scope[0])
    spec = step_spec(fn)
    reset = enter_plain(run, scope, elsewhere=not local)
    try:
        if spec is None or own_step_spec(fn) is None:  # a decorator over the step: its code runs too
            return fn(item)
        args = step_args(fn, item)
        if spec.cache is not None and local:
            return drive_sync(plain_plan(spec, args, {}, ONE_TRY))
        return unkept.made_by(spec, spec.attempt()(*args))
    finally:
        reset()


def step_args(fn: Callable[[Any], Any], item: Any) -> tuple[Any, ...]:
    """A step body's arguments for one item: a method's (`loop_over(obj.step, ...)`) the instance first."""
    return (fn.__self__, item) if isinstance(fn, types.MethodType) else (item,)


async def acall_item(
    fn: Callable[[Any], Any],
    item: Any,
    trace: Trace = NO_TRACE,
    scope: ItemScope | None = None,
) -> Any:
    """`call_item` for an `async def` function or step."""
    if trace[0]:
        with item_span(*trace):
            return await acall_item(fn, item, NO_TRACE, scope)
    spec = step_spec(fn)
    reset = enter_plain(None, scope)
    try:
        return await _acall(fn, spec, item)
    finally:
        reset()


async def _acall(fn: Callable[[Any], Any], spec: Any, item: Any) -> Any:
    if spec is None or own_step_spec(fn) is None:  # a decorator over the step: its code runs too
        return await fn(item)
    args = step_args(fn, item)
    if spec.cache is not None:
        return await drive_async(plain_plan(spec, args, {}, ONE_TRY))
    return await spec.attempt()(*args)


def run_pickled(
    token: str,
    fn_blob: bytes,
    item_travel: tuple[bytes, str | None],
    trace: Trace = NO_TRACE,
    owner: int = 0,
    code: str | None = None,
    until: Until = None,
    gate: str | None = None,
) -> bytes:
    """The task a process or Dask worker runs. Never raises for the item's own errors: they
    come back pickled with their traceback text. `owner`: the workflow process of a process
    pool (`orphan`); `code`: fn's fingerprint there (`workercode`); `until`: when the run's
    lease it was handed out under may be over (`handout`): from then on it comes back unstarted;
    `gate`: the run's on this host, locked from the look at `owner` to the try's end (`triesgate`)."""
    leave_if_orphaned(owner)
    try:
        fn = worker_fn(token, fn_blob, code)
        item = worker_item(item_travel)
    except Exception as exc:
        return _pack_error(exc)
    with trying(gate):
        leave_if_orphaned(owner)  # again as the body starts: the loads take milliseconds
        late = lapsed(until, here=bool(owner))
        if late is not None:
            return codec.dumps_callable((None, late, ""))
        before = unkept.here.returned
        try:
            # Another process: the run's store is not known here, so no cache.
            value, made = unkept.made_elsewhere(lambda: call_item(fn, item, trace, local=False))
        except Exception as exc:  # its text may spell a persist=False step's output made here
            return _pack_error(exc, unkept.UNKEPT if unkept.here.returned != before else "")
    try:
        return codec.dumps_callable((True, value, made))
    except Exception as exc:
        err = SerializationError(repr(fn), type(value).__qualname__, f"{type(exc).__name__}: {error_message(exc)}")
        return _pack_error(err)


def _pack_error(exc: Exception, made: str = "") -> bytes:
    """`made`: `UNKEPT` when a persist=False step returned something in the try
    (`outcome.unpack_outcome` holds the error as its output: its text is not kept)."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    sent: tuple[Any, ...] = (made,) if made else ()  # a fourth part only then: an older reader takes three
    try:
        packed = codec.dumps_callable((False, exc, tb, *sent))
        # One that pickles but cannot be unpickled (a __reduce__ giving what its __init__
        # refuses) would raise a TypeError in the workflow process in place of the item's error.
        codec.loads_callable(packed)
        return packed
    except Exception:  # an exception that cannot travel still reports its text
        return codec.dumps_callable((False, RuntimeError(f"{type(exc).__name__}: {error_message(exc)}"), tb, *sent))


class Pool(Protocol):
    """What the block driver needs of an executor."""

    window: int  # items kept in flight so that workers never wait for the next one

    def submit(self, items: list[Any], scopes: list[ItemScope | None] | None = None) -> list[Any]: ...
    def wait(self, handles: Iterable[Any], timeout: float | None = None) -> set[Any]: ...
    def outcome(self, handle: Any) -> Any: ...
    def cancel(self, handles: Iterable[Any]) -> None: ...
    def unstart(self, handles: list[Any]) -> list[Any]: ...


class FuturesPool:
    """A `concurrent.futures.Executor`. Thread pools share memory, so items
    are handed over as they are; every other executor gets pickled bytes."""

    def __init__(self, executor: cf.Executor, fn: Callable[[Any], Any], trace: Trace) -> None:
        self.executor = executor
        self.fn = fn
        self.trace = trace
        self.threads = isinstance(executor, cf.ThreadPoolExecutor)
        # A thread starts without the caller's context: it is handed the run;
        # another process's worker, the time its lease lasts (`handout`).
        self.run = current_state()
        self.token = uuid.uuid4().hex
        self.blob, self.code = (b"", "") if self.threads else fn_travel(fn)
        # A process pool's workers run on this machine and outlive a kill of
        # this process (`orphan`); another executor's may run elsewhere.
        self.owner = os.getpid() if isinstance(executor, cf.ProcessPoolExecutor) else 0
        self.tries_gate = handed(gate_of(self.run.lease)) if self.owner and self.run is not None else None
        self.window = 2 * int(getattr(executor, "_max_workers", 8) or 8)
        self.gate = Gate()

    def submit(self, items: list[Any], scopes: list[ItemScope | None] | None = None) -> list[Any]:
        """Each item's try, as soon as a worker takes it. Its
        scope in the run (`call_item`) reaches this process's threads only:
        another process has no run to tell it. A thread's try goes through
        the gate (`gate`)."""
        if self.threads:
            where = scopes or [None] * len(items)
            submit, pool, fn, trace = self.gate.submit, self.executor, self.fn, self.trace
            return [
                submit(pool, scope, call_item, fn, item, trace, self.run)
                for item, scope in zip(items, where, strict=True)
            ]
        if not items:
            return []
        until = hand_out(self.run, scopes)
        return [
            self.executor.submit(
                run_pickled, self.token, self.blob, item_blob(item), self.trace, self.owner,
                self.code, until, self.tries_gate,
            )
            for item in items
        ]

    def wait(self, handles: Iterable[Any], timeout: float | None = None) -> set[Any]:
        done, _ = cf.wait(list(handles), timeout, return_when=cf.FIRST_COMPLETED)
        return done

    def outcome(self, handle: Any) -> Any:
        return self.gate.taken(handle) if self.threads else unpack_outcome(handle.result())

    def cancel(self, handles: Iterable[Any]) -> None:
        for h in handles:
            h.cancel()

    def unstart(self, handles: list[Any]) -> list[Any]:
        """Cancel the items that have not started; return them."""
        return [h for h in handles if h.cancel()]


def is_dask_client(obj: object) -> bool:
    return type(obj).__module__.split(".")[0] == "distributed" and hasattr(obj, "nthreads")


def check_executor(executor: object) -> None:
    if executor is None or isinstance(executor, cf.Executor) or is_dask_client(executor):
        return
    raise ConfigurationError(
        f"loop_over(executor=...) takes a concurrent.futures.Executor (ThreadPoolExecutor, "
        f"ProcessPoolExecutor) or a dask.distributed.Client, not {type(executor).__qualname__}"
    )
