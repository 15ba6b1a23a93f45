"""The pool a `loop_over` block hands its items to: a `concurrent.futures`
executor's (`executors.FuturesPool`) or a Dask cluster's (`daskpool`)."""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable
from typing import Any

from .._core.cachewhy import tell_elsewhere
from .._core.spec import step_spec
from .daskpool import DaskPool
from .executors import NO_TRACE, FuturesPool, Pool, Trace, check_executor


def open_pool(executor: object, fn: Callable[[Any], Any], trace: Trace = NO_TRACE) -> Pool:
    check_executor(executor)
    tell_elsewhere(step_spec(fn), executor)
    if isinstance(executor, cf.Executor):
        return FuturesPool(executor, fn, trace)
    return DaskPool(executor, fn, trace)
