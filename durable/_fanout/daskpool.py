"""`loop_over` items on a Dask cluster (`dask.distributed.Client`): each
item a task running `executors.run_pickled`, handed out under the run's
lease (`handout`)."""

from __future__ import annotations

import contextlib
import importlib
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from .._core.context import ItemScope, current_state
from .executors import Trace, run_pickled
from .handout import hand_out
from .outcome import unpack_outcome
from .workercode import fn_travel, item_blob


class DaskPool:
    """A `dask.distributed.Client`. `distributed` is imported only here, so
    it stays an optional extra. Results are fetched by the client's own loop
    as tasks finish (`as_completed(with_results=True)`): asking each future
    for its result one by one costs a round trip through that loop per item."""

    def __init__(self, client: Any, fn: Callable[[Any], Any], trace: Trace) -> None:
        distributed: Any = importlib.import_module("distributed")
        self.client = client
        self.run = current_state()  # whose lease each task is handed out under (`handout`)
        self.trace = trace
        self.token = uuid.uuid4().hex
        self.blob, self.code = fn_travel(fn)
        self.finished: Any = distributed.as_completed([], with_results=True, raise_errors=False)
        self.results: dict[Any, Any] = {}
        threads = sum(client.nthreads().values())
        self.window = 4 * threads if threads else 32

    def submit(self, items: list[Any], scopes: list[ItemScope | None] | None = None) -> list[Any]:
        if not items:
            return []
        until = hand_out(self.run, scopes)
        blobs = [item_blob(item) for item in items]
        n = len(blobs)
        token, blob, trace, code = [self.token] * n, [self.blob] * n, [self.trace] * n, [self.code] * n
        futures = self.client.map(
            run_pickled, token, blob, blobs, trace, [0] * n, code, [until] * n, pure=False
        )
        self.finished.update(futures)
        return list(futures)

    def wait(self, handles: Iterable[Any], timeout: float | None = None) -> set[Any]:
        """The tasks finished, as soon as one is, or none after `timeout`."""
        batch = self.finished.next_batch(block=timeout is None)
        if timeout is not None and not batch:
            self._wait_ready(handles, timeout)
            batch = self.finished.next_batch(block=False)
        self.results.update(batch)
        return {future for future, _ in batch}

    def _wait_ready(self, handles: Iterable[Any], timeout: float) -> None:
        """Until a result is ready or `timeout` passes. `as_completed` has no
        public wait with a timeout: its condition is what its blocking `next`
        waits on; a release without it waits on the tasks themselves."""
        condition = getattr(self.finished, "thread_condition", None)
        if condition is None:
            distributed: Any = importlib.import_module("distributed")
            with contextlib.suppress(distributed.TimeoutError, TimeoutError):
                distributed.wait(list(handles), timeout, return_when="FIRST_COMPLETED")
            return
        with condition:
            if not self.finished.has_ready():
                condition.wait(timeout)

    def outcome(self, handle: Any) -> Any:
        result = self.results.pop(handle)
        # What came back decides (`run_pickled` returns bytes), not the status now:
        # a worker dying once it handed the result over turns that back to pending.
        if not isinstance(result, bytes):  # the task failed: its worker died, ...
            raise _task_error(result)
        return unpack_outcome(result)

    def cancel(self, handles: Iterable[Any]) -> None:
        pending = list(handles)
        if pending:
            self.client.cancel(pending)

    def unstart(self, handles: list[Any]) -> list[Any]:
        # The client cannot tell queued tasks from running ones: all of them finish.
        return []


def _task_error(result: Any) -> BaseException:
    """The error of a Dask task that failed outside `run_pickled` (its worker
    died: `KilledWorker`), which `as_completed` gives as an exc_info triple."""
    if isinstance(result, tuple) and len(result) == 3 and isinstance(result[1], BaseException):
        return result[1].with_traceback(result[2])
    return result if isinstance(result, BaseException) else RuntimeError(repr(result))
