"""Whether a cached call's body read its run (`durable.current_run()`):
the run id, the idempotency key, the attempt. Its output may be made of
them, which the cache key (the code and the arguments) does not hold, so
another run must not be served it: such a call is not cached
(`cache.Ticket.read_its_run`).

Each cached call being computed watches with a cell of its own; a call
inside it (a step called in its body) watches with its own too, and a read
marks every cell watching: the outer output is made of the inner one."""

from __future__ import annotations

import contextvars
from collections.abc import Callable

_watching: contextvars.ContextVar[tuple[list[bool], ...]] = contextvars.ContextVar(
    "durable_run_read", default=()
)


def note() -> None:
    """The run was read here (`context.current_run`)."""
    for cell in _watching.get():
        cell.append(True)


def watch(cell: list[bool]) -> Callable[[], None]:
    """Reads of the run from here until the returned reset mark cell."""
    token = _watching.set((*_watching.get(), cell))
    return lambda: _watching.reset(token)


def watched(
    enter: Callable[[], Callable[[], None]], cell: list[bool] | None
) -> Callable[[], Callable[[], None]]:
    """A try's `plan.Call` hook `enter`, also watching reads of the run into
    cell while the try runs (None: nothing to watch, `enter` itself)."""
    if cell is None:
        return enter

    def both() -> Callable[[], None]:
        reset = enter()
        unwatch = watch(cell)

        def undo() -> None:
            try:
                unwatch()
            finally:
                reset()

        return undo

    return both
