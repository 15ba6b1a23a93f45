"""`@durable.step`: outside a run, a plain call; inside, a recorded position."""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, overload

from .._calls import at_callers, keywords
from .._core.bound import note_made
from .._core.cacheoption import Cache, cache_option
from .._core.context import active_run
from .._core.plan import drive_async, named
from .._core.retry import RetryOn, RetryPolicy
from .._core.signature import call_signature
from .._core.spec import StepSpec, current_fingerprint, with_validator
from .._core.steps import step_plan, sync_caller
from .._core.unkept import awaited
from .._fingerprint.madewith import DECORATING
from .._fingerprint.memo import memo_fingerprint
from .._fingerprint.reach import default_name
from ..errors import ConfigurationError
from .bound import Takes
from .decoration import (
    check_artifact_options,
    check_flags,
    check_naming,
    check_validator,
    outermost,
    refuse_generators,
)

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
S = TypeVar("S")
R_co = TypeVar("R_co", covariant=True)
S_contra = TypeVar("S_contra", contravariant=True)


class Step(Protocol, Generic[P, R_co]):
    """A step: call it like the function it wraps."""

    __durable_fingerprint__: str
    fingerprint: str
    name: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    # A step in a class body is a method, as a function is: through an
    # instance its first parameter is bound. Without this, type checkers
    # took `self.method_step(x)` for a call missing `x`. mypy applies this
    # __get__ under @staticmethod and @classmethod too: see `Takes`.
    @overload
    def __get__(self: Takes[type[S], P2, R_co], obj: None, owner: type[S], /) -> Step[P2, R_co]: ...
    @overload
    def __get__(self, obj: None, owner: type | None = None, /) -> Step[P, R_co]: ...
    @overload
    def __get__(
        self: Takes[S, P2, R_co], obj: S, owner: type | None = None, /
    ) -> Step[P2, R_co]: ...
    @overload
    def __get__(
        self: Takes[type[S], P2, R_co], obj: S, owner: type | None = None, /
    ) -> Step[P2, R_co]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None, /) -> Step[P, R_co]: ...


class _StepDecorator(Protocol):
    def __call__(self, fn: Callable[P, R], /) -> Step[P, R]: ...


@overload
def step(fn: Callable[P, R], /) -> Step[P, R]: ...
@overload
def step(
    *,
    name: str | None = None,
    version: str | None = None,
    retries: int = 0,
    retry_delay: float = 1.0,
    backoff: float = 2.0,
    max_delay: float = 60.0,
    retry_on: RetryOn = (Exception,),
    persist: bool = True,
    deep: bool = True,
    artifacts: Callable[[Any], Iterable[Any]] | None = None,
    artifacts_policy: str = "rerun",
    verify: str = "digest",
    cache: bool | Cache = False,
    validate: Callable[[Any], object] | None = None,
) -> _StepDecorator: ...
@keywords("step")
def step(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    version: str | None = None,
    retries: int = 0,
    retry_delay: float = 1.0,
    backoff: float = 2.0,
    max_delay: float = 60.0,
    retry_on: RetryOn = (Exception,),
    persist: bool = True,
    deep: bool = True,
    artifacts: Callable[[Any], Iterable[Any]] | None = None,
    artifacts_policy: str = "rerun",
    verify: str = "digest",
    cache: bool | Cache = False,
    validate: Callable[[Any], object] | None = None,
) -> Any:
    """Mark a function as a step of a workflow.

    Inside a workflow run each call takes the next position and its output is
    recorded; a re-run returns the recorded output instead of calling it.
    Outside a run (or inside another step) it is a plain call.

    Files the step produces are registered with `durable.artifact(path)` in
    its body or derived from its result by `artifacts=lambda result: [...]`;
    they are checked (`verify="digest"` or `"mtime"`) before the record is
    replayed, and a missing or changed one runs the step again
    (`artifacts_policy="rerun"`) or raises `ArtifactMissingError` ("refuse").

    `cache=True` (or `durable.Cache(expire=, ignore=, key=)`) reuses the
    output in any run and in plain calls while the step's code and arguments
    are the same (see `durable.Cache`).

    `validate=fn` checks each output before it is recorded: a false result
    or an exception fails the attempt with `ValidationError` (retries apply)
    and nothing is recorded."""
    retry = RetryPolicy.checked(retries, retry_delay, backoff, max_delay, retry_on)
    check_naming("step", name, version)
    check_flags(persist=persist, deep=deep)
    check_artifact_options(artifacts, artifacts_policy, verify)
    check_validator(validate)

    def decorate(f: Callable[..., Any]) -> Any:
        if isinstance(f, (staticmethod, classmethod)):
            return outermost(f, decorate)
        refuse_generators(f)
        if hasattr(f, "__durable_step__"):  # the inner one would run as a plain call
            raise ConfigurationError(
                f"{f.__durable_step__.name} is already a durable step: decorate the function "
                "once, with all its options in one decorator: @durable.step(retries=3, ...)"
            )
        # Through the memo a run's start asks (`refingerprint`, the same key):
        # it fingerprinted each step a second time, while nothing it read changed.
        token = DECORATING.set(True)
        try:
            fp = memo_fingerprint(f, name=name, version=version, deep=deep)
        finally:
            DECORATING.reset(token)
        signature = _signature(f)
        who = name or default_name(f)
        spec = StepSpec(
            name=who,
            fingerprint=fp.value,
            fn=f,
            retry=retry,
            persist=persist,
            artifacts=artifacts,
            artifacts_policy=artifacts_policy,
            verify=verify,
            pinned_name=name,
            version=version,
            deep=deep,
            signature=signature,
            cache=cache_option(cache, persist=persist, signature=signature, who=who),
            body=with_validator(f, validate, who) if validate is not None else None,
            validate=validate,
        )
        wrapper = _async_wrapper(spec) if inspect.iscoroutinefunction(f) else sync_caller(spec)
        functools.update_wrapper(wrapper, f)
        wrapper.__durable_fingerprint__ = fp.value  # type: ignore[attr-defined]
        # What it counts for where it is called or passed: its code as of now.
        wrapper.__durable_refingerprint__ = functools.partial(current_fingerprint, spec)  # type: ignore[attr-defined]
        wrapper.__durable_step__ = spec  # type: ignore[attr-defined]
        wrapper.__durable_parts__ = dict(fp.parts)  # type: ignore[attr-defined]
        wrapper.fingerprint = fp.value  # type: ignore[attr-defined]
        wrapper.name = spec.name  # type: ignore[attr-defined]
        ctx = active_run()
        if ctx is not None and ctx.bodies:  # made while a body runs
            note_made(f, ctx.bodies)
        return wrapper

    return decorate(fn) if fn is not None else at_callers(decorate)  # its errors at the user's line, as without options


def _async_wrapper(spec: StepSpec) -> Callable[..., Any]:
    return _AsyncStep(spec)


class _AsyncStep:
    """An async step. It takes its position (in the scope of the body or of
    the asyncio task calling it) when CALLED, not when its coroutine first
    runs: `asyncio.gather(a(1), b(2))` or a task created before another step
    is awaited then number their steps in call order, so a resumed run (where
    replayed steps return at once) hands each record back to the call that
    made it. It carries the wrapped function's code
    attributes so that `inspect.iscoroutinefunction()` is True on 3.10+."""

    def __init__(self, spec: StepSpec) -> None:
        self._spec = spec
        fn = spec.fn
        self._name = getattr(fn, "__qualname__", spec.name)
        self.__code__ = fn.__code__
        self.__defaults__ = fn.__defaults__
        self.__kwdefaults__ = fn.__kwdefaults__
        self.__annotations__ = getattr(fn, "__annotations__", {})

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        ctx = active_run()
        if ctx is None:
            if self._spec.cache is not None:
                from .._core.cacheplain import plain_plan

                return named(drive_async(plain_plan(self._spec, args, kwargs)), self._name)
            if not self._spec.persist:  # what holds its output is not kept either (`unkept`)
                return awaited(self._spec.attempt()(*args, **kwargs))
            return self._spec.attempt()(*args, **kwargs)  # type: ignore[no-any-return]
        pos = ctx.take_position(self._spec.what)
        return named(drive_async(step_plan(ctx, self._spec, args, kwargs, pos)), self._name)


    def __get__(self, obj: object, owner: type | None = None) -> Any:
        # Behave like a function when used as a method.
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<durable async step {self._spec.name}>"


def _signature(f: Callable[..., Any]) -> inspect.Signature | None:
    # A callable without one (some builtins) has its arguments digested as given.
    try:
        return call_signature(f)
    except (TypeError, ValueError):
        return None
