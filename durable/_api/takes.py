"""What `wf.resume()` and `wf.fork()` take, said when a call gives them
something else (`wf.resume("r1", "yes")`): Python said only "takes 2
positional arguments but 3 were given", not that a run's arguments are
recorded with it and replaced by keyword."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .._calls import callers, users_frames
from .._core.signature import signature_of

F = TypeVar("F", bound=Callable[..., Any])


def said_takes(fn: F) -> F:
    """`fn` (a workflow's resume or fork), a call that does not bind told
    what it takes, with the workflow's own first parameter as the example;
    what it raises shown from the caller's frames, as `at_callers` does."""
    signature = inspect.signature(fn)

    def unbound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as e:
            return _takes(fn.__name__, args, e)
        return None

    if inspect.iscoroutinefunction(fn):  # still one to `inspect`, as the async workflow's own
        return _awaited(fn, unbound)

    @functools.wraps(fn)
    def shown(*args: Any, **kwargs: Any) -> Any:
        if said := unbound(args, kwargs):
            raise callers(TypeError(said))
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # as `at_callers`: this frame instead of the run's
            if users_frames(e):
                raise e  # durable's own frames left out: DURABLE_TRACEBACK=full shows them
            raise

    return shown  # type: ignore[return-value]


def _awaited(fn: F, unbound: Callable[[tuple[Any, ...], dict[str, Any]], str | None]) -> F:
    @functools.wraps(fn)
    async def shown(*args: Any, **kwargs: Any) -> Any:
        if said := unbound(args, kwargs):
            raise callers(TypeError(said))
        try:
            return await fn(*args, **kwargs)
        except Exception as e:
            if users_frames(e):
                raise e  # durable's own frames left out: DURABLE_TRACEBACK=full shows them
            raise

    return shown  # type: ignore[return-value]


def _takes(called: str, args: tuple[Any, ...], e: TypeError) -> str:
    wf, given = args[0], args[1:]
    run = repr(given[0]) if given and isinstance(given[0], str) else "'RUN_ID'"
    first = next(iter(signature_of(wf.fn).parameters), "x")
    replace = f"any other keyword replaces an argument the run recorded ({first}=...)"
    if called == "fork":
        return (f"{wf.name}.fork() takes the run id and at=POSITION, the first position "
                f"run again (`durable show RUN` numbers them), then keywords: new_run_id=, "
                f"mutate=; {replace}: {wf.name}.fork({run}, at=1) ({e})")  # fmt: skip
    return (f"{wf.name}.resume() takes the run id, then keywords: inputs={{NAME: VALUE}} "
            f"answers its durable.wait_for() calls; {replace}, as in "
            f"{wf.name}.resume({run}, {first}=...); the others are the run's own ({e})")  # fmt: skip
