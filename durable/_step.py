"""`@durable.step`: outside a run, a plain call; inside, a recorded position."""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, Protocol, TypeVar, overload

from typing_extensions import ParamSpec

from ._context import active_run
from ._engine import StepSpec, drive_async, drive_sync, step_plan
from ._errors import ConfigurationError
from ._fingerprint import fingerprint_function
from ._reach import default_name

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Step(Protocol, Generic[P, R_co]):
    """A step: call it like the function it wraps."""

    __durable_fingerprint__: str
    fingerprint: str
    name: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


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
    retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    persist: bool = True,
    deep: bool = True,
    artifacts: Callable[[Any], Iterable[Any]] | None = None,
    artifacts_policy: str = "rerun",
    verify: str = "digest",
) -> _StepDecorator: ...
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
    retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    persist: bool = True,
    deep: bool = True,
    artifacts: Callable[[Any], Iterable[Any]] | None = None,
    artifacts_policy: str = "rerun",
    verify: str = "digest",
) -> Any:
    """Mark a function as a step of a workflow.

    Inside a workflow run each call takes the next position and its output is
    recorded; a re-run returns the recorded output instead of calling it.
    Outside a run (or inside another step) it is a plain call.

    Files the step produces are registered with `durable.artifact(path)` in
    its body or derived from its result by `artifacts=lambda result: [...]`;
    they are checked (`verify="digest"` or `"mtime"`) before the record is
    replayed, and a missing or changed one runs the step again
    (`artifacts_policy="rerun"`) or raises `ArtifactMissingError` ("refuse")."""
    if retries < 0 or retry_delay < 0 or backoff < 1 or max_delay < 0:
        raise ConfigurationError("retries, retry_delay and max_delay must be >= 0 and backoff >= 1")
    _check_artifact_options(artifacts, artifacts_policy, verify)
    retry_types = _exception_types(retry_on)

    def decorate(f: Callable[..., Any]) -> Any:
        _refuse_generators(f)
        fp = fingerprint_function(f, name=name, version=version, deep=deep)
        spec = StepSpec(
            name=name or _default_name(f),
            fingerprint=fp.value,
            fn=f,
            retries=retries,
            retry_delay=retry_delay,
            backoff=backoff,
            max_delay=max_delay,
            retry_on=retry_types,
            persist=persist,
            artifacts=artifacts,
            artifacts_policy=artifacts_policy,
            verify=verify,
            pinned_name=name,
            version=version,
            deep=deep,
            signature=_signature(f),
        )
        wrapper = _async_wrapper(spec) if inspect.iscoroutinefunction(f) else _sync_wrapper(spec)
        functools.update_wrapper(wrapper, f)
        wrapper.__durable_fingerprint__ = fp.value  # type: ignore[attr-defined]
        wrapper.__durable_step__ = spec  # type: ignore[attr-defined]
        wrapper.__durable_parts__ = dict(fp.parts)  # type: ignore[attr-defined]
        wrapper.fingerprint = fp.value  # type: ignore[attr-defined]
        wrapper.name = spec.name  # type: ignore[attr-defined]
        return wrapper

    return decorate(fn) if fn is not None else decorate


def _sync_wrapper(spec: StepSpec) -> Callable[..., Any]:
    def call_step(*args: Any, **kwargs: Any) -> Any:
        ctx = active_run()
        if ctx is None:
            return spec.fn(*args, **kwargs)
        return drive_sync(step_plan(ctx, spec, args, kwargs))

    return call_step


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
        self.__code__ = fn.__code__
        self.__defaults__ = fn.__defaults__
        self.__kwdefaults__ = fn.__kwdefaults__
        self.__annotations__ = getattr(fn, "__annotations__", {})

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        ctx = active_run()
        if ctx is None:
            return self._spec.fn(*args, **kwargs)  # type: ignore[no-any-return]
        pos = ctx.take_position(f"step {self._spec.name!r}")
        return drive_async(step_plan(ctx, self._spec, args, kwargs, pos))

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        # Behave like a function when used as a method.
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<durable async step {self._spec.name}>"


def _signature(f: Callable[..., Any]) -> inspect.Signature | None:
    # A callable without one (some builtins) has its arguments digested as given.
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None


def _check_artifact_options(artifacts: object, policy: str, verify: str) -> None:
    if artifacts is not None and not callable(artifacts):
        raise ConfigurationError(
            "artifacts= takes a function of the step's result returning paths, "
            "e.g. artifacts=lambda result: [result.path]"
        )
    if policy not in ("rerun", "refuse"):
        raise ConfigurationError(f"artifacts_policy must be 'rerun' or 'refuse', not {policy!r}")
    if verify not in ("digest", "mtime"):
        raise ConfigurationError(f"verify must be 'digest' or 'mtime', not {verify!r}")


def _default_name(f: Callable[..., Any]) -> str:
    return default_name(f)  # `base(k=2)` for a partial: the same in every process


def _refuse_generators(f: Callable[..., Any]) -> None:
    if inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f):
        raise ConfigurationError(
            f"{_default_name(f)} is a generator function; a step or workflow must return its "
            "value. Collect the items into a list and return that."
        )
    if not callable(f):
        raise ConfigurationError(f"{f!r} is not callable")


def step_spec(obj: object) -> StepSpec | None:
    spec = getattr(obj, "__durable_step__", None)
    return spec if isinstance(spec, StepSpec) else None


def _exception_types(retry_on: object) -> tuple[type[BaseException], ...]:
    items: list[object] = [retry_on] if isinstance(retry_on, type) else []
    if not items and isinstance(retry_on, (tuple, list, set, frozenset)):
        items = list(retry_on)
    if not items or not all(isinstance(t, type) and issubclass(t, BaseException) for t in items):
        raise ConfigurationError(
            f"retry_on must be an exception class or a tuple of them, not {retry_on!r}"
        )
    return tuple(t for t in items if isinstance(t, type) and issubclass(t, BaseException))
