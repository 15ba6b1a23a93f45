"""A workflow defined in a class body and reached through an instance (or,
under `classmethod`, through its class) is a method: the instance is its
first argument, bound as a function's `self` is. It counts as any argument
does, by its state (DESIGN §2, the identity of a call), in the derived run
id and in the run's recorded arguments. Without this binding the call's
first argument took the instance's place (`obj.wf("a", "b")` ran with
`self="a"`, or failed naming a missing argument)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from .._core.signature import signature_of

if TYPE_CHECKING:
    from .._core.context import Run

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
S_contra = TypeVar("S_contra", contravariant=True)


class Takes(Protocol[S_contra, P, R_co]):
    """A callable whose first positional parameter takes S_contra: the self
    type of a step's or a workflow's `__get__`, which binds the instance
    only when its first parameter takes it (a static one's does not, a
    class method's takes the class). As Step[Concatenate[S, P2], R] or
    Workflow[Concatenate[S, P2], R], mypy left S unsolved, and bound any
    instance to any first parameter: under @staticmethod, `obj.step(2)`
    was refused as a call with one argument too many."""

    def __call__(self, first: S_contra, /, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


class Bound(Protocol[P, R]):
    """How type checkers see `obj.workflow`: the workflow's signature
    without its first parameter (`BoundWorkflow` at run time)."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...
    def run(self, *args: P.args, **kwargs: P.kwargs) -> Run[R]: ...
    def with_options(self, **options: Any) -> Bound[P, R]: ...
    def resume(self, run_id: str, /, **options: Any) -> Run[R]: ...
    def fork(self, run_id: str, /, at: int, **options: Any) -> Run[R]: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncBound(Protocol[P, R]):
    """`Bound` of an `async def` workflow: each call gives a coroutine."""

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...
    async def run(self, *args: P.args, **kwargs: P.kwargs) -> Run[R]: ...
    def with_options(self, **options: Any) -> AsyncBound[P, R]: ...
    async def resume(self, run_id: str, /, **options: Any) -> Run[R]: ...
    async def fork(self, run_id: str, /, at: int, **options: Any) -> Run[R]: ...
    def __getattr__(self, name: str) -> Any: ...


class BoundWorkflow:
    """`obj.workflow`: calls and runs pass `obj` first; everything else
    (resume, fork, runs, history, name, fingerprint) is the workflow's."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, workflow: Any, owner: object) -> None:
        self.__func__ = workflow
        self.__self__ = owner

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__(self.__self__, *args, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__.run(self.__self__, *args, **kwargs)

    def with_options(self, **options: Any) -> BoundWorkflow:
        return BoundWorkflow(self.__func__.with_options(**options), self.__self__)

    def resume(self, run_id: str, /, **options: Any) -> Any:
        # This instance, not a copy read back from the run (which a class
        # that cannot be pickled never recorded); a changed one is a changed
        # argument, as in any resume override.
        return self.__func__.resume(run_id, **options, **self._own())

    def fork(self, run_id: str, /, at: int, **options: Any) -> Any:
        return self.__func__.fork(run_id, at, **options, **self._own())

    def _own(self) -> dict[str, object]:
        first = next(iter(signature_of(self.__func__.fn).parameters))
        return {first: self.__self__}

    def __getattr__(self, name: str) -> Any:
        if name in BoundWorkflow.__slots__:  # not set yet: copy and pickle ask first
            raise AttributeError(name)
        return getattr(self.__func__, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return BoundWorkflow, (self.__func__, self.__self__)

    def __repr__(self) -> str:
        return f"<bound {self.__func__!r} of {self.__self__!r}>"
