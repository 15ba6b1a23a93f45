"""`AsyncWorkflow`: a workflow over an `async def`, whose calls give
coroutines; the plan it drives is `Workflow`'s own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, overload

from .._core.context import Run
from .._core.plan import drive_async
from .._core.run import Options
from .bound import AsyncBound, Takes
from .steer import AsyncSteering
from .takes import said_takes
from .workflow import Workflow

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
S = TypeVar("S")


class AsyncWorkflow(AsyncSteering, Workflow[P, R]):
    """A workflow over an `async def`: calling it gives a coroutine."""

    def __init__(
        self, fn: Callable[..., Any], name: str | None, version: str | None, options: Options
    ) -> None:
        super().__init__(fn, name, version, options)
        # These make inspect.iscoroutinefunction() see a coroutine function.
        self.__code__ = fn.__code__
        self.__defaults__ = fn.__defaults__
        self.__kwdefaults__ = fn.__kwdefaults__
        self.__annotations__ = getattr(fn, "__annotations__", {})

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:  # type: ignore[override]
        return await drive_async(self._call_plan(args, kwargs))

    async def run(self, *args: P.args, **kwargs: P.kwargs) -> Run[R]:  # type: ignore[override]
        return await drive_async(self._plan(args, kwargs))

    @said_takes
    async def resume(  # type: ignore[override]
        self, run_id: str, /, *, inputs: dict[str, Any] | None = None, **overrides: Any
    ) -> Run[R]:
        plan = self._plan((), {}, resume_id=run_id, overrides=overrides, inputs=inputs)
        return await drive_async(plan)

    @said_takes
    async def fork(  # type: ignore[override]
        self,
        run_id: str,
        /,
        at: int,
        *,
        new_run_id: str | None = None,
        mutate: Callable[[Any], Any] | None = None,
        **overrides: Any,
    ) -> Run[R]:
        return await self.resume(self._fork(run_id, at, new_run_id, mutate), **overrides)

    def with_options(self, **options: Any) -> AsyncWorkflow[P, R]:
        return super().with_options(**options)  # type: ignore[return-value]

    @overload  # type: ignore[override]  # the same binding; its calls give coroutines
    def __get__(self, obj: None, owner: type | None = None, /) -> Any: ...
    @overload
    def __get__(
        self: Takes[S, P2, Awaitable[R]], obj: S, owner: type | None = None, /
    ) -> AsyncBound[P2, R]: ...
    @overload
    def __get__(
        self: Takes[type[S], P2, Awaitable[R]], obj: S, owner: type | None = None, /
    ) -> AsyncBound[P2, R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None, /) -> AsyncWorkflow[P, R]: ...
    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return super().__get__(obj, owner)
