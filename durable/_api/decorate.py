"""`@durable.workflow`: the decorator, with and without options, and its
overloads (a `def` gives a `Workflow`, an `async def` an `AsyncWorkflow`)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, Protocol, TypeVar, overload

from .._calls import at_callers, keywords
from .._core.bound import note_made
from .._core.context import active_run
from .._core.run import Options
from .._storage.base import Store
from ..errors import ConfigurationError
from .asyncworkflow import AsyncWorkflow
from .decoration import check_naming, outermost, refuse_generators
from .options import check_options
from .workflow import Workflow

P = ParamSpec("P")
R = TypeVar("R")


def make_workflow(
    fn: Callable[..., Any], name: str | None, version: str | None, options: Options
) -> Any:
    if isinstance(fn, (staticmethod, classmethod)):
        return outermost(fn, lambda f: make_workflow(f, name, version, options))
    refuse_generators(fn)
    if isinstance(fn, Workflow):  # its call would fail in inspect, far from here
        raise ConfigurationError(
            f"{fn.name} is already a durable workflow: decorate the function once, and give "
            "other options with .with_options(...) (run_id=, store=, on_change=, wait=)"
        )
    cls = AsyncWorkflow if inspect.iscoroutinefunction(fn) else Workflow
    ctx = active_run()
    if ctx is not None and ctx.bodies:  # made while a body runs: a child a factory makes
        note_made(fn, ctx.bodies)
    return cls(fn, name, version, options)


class _WorkflowDecorator(Protocol):
    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> AsyncWorkflow[P, R]: ...
    @overload
    def __call__(self, fn: Callable[P, R], /) -> Workflow[P, R]: ...


@overload
def workflow(fn: Callable[P, Coroutine[Any, Any, R]], /) -> AsyncWorkflow[P, R]: ...
@overload
def workflow(fn: Callable[P, R], /) -> Workflow[P, R]: ...
@overload
def workflow(
    *,
    name: str | None = None,
    version: str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    run_id: str | Callable[..., str] | None = None,
    on_change: str | None = None,
    keep_last: int | None = None,
    progress_file: str | os.PathLike[str] | None = None,
    durability: str | None = None,
) -> _WorkflowDecorator: ...
@keywords("workflow")
def workflow(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    version: str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    run_id: str | Callable[..., str] | None = None,
    on_change: str | None = None,
    keep_last: int | None = None,
    progress_file: str | os.PathLike[str] | None = None,
    durability: str | None = None,
) -> Any:
    """Make a function resumable: its steps are recorded under a run id, and
    calling it again with the same run id replays them instead of running."""
    check_naming("workflow", name, version)
    options = Options(run_id, store, on_change=on_change, keep_last=keep_last,
                      progress_file=progress_file, durability=durability)  # fmt: skip
    check_options(options)  # shown at the user's line, as step(retries=-1) is

    def decorate(f: Callable[..., Any]) -> Any:
        return make_workflow(f, name, version, options)

    return decorate(fn) if fn is not None else at_callers(decorate)  # its errors at the user's line, as without options
