"""Entering a run's body: its context set as one, so that a Ctrl-C landing
part-way leaves nothing of it behind."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import Token
from typing import Any

from .._fingerprint.madewith import RUN_OF, run_left
from .context import RunState, _active_var, _run_var
from .scope import current, reset_vars, scope_var, set_scope
from .taskfactory import enter_root


def enter_run(ctx: RunState | None) -> Callable[[], None]:
    """Run the body of ctx's run here: its positions start at 0. Nothing stays
    set when a Ctrl-C lands before the caller holds the reset: every later
    call in that context (a notebook's) would count as inside this run."""
    # RUN_OF: what its steps hold, as this run first read it (`madewith.held_snapshot`).
    run = None if ctx is None else (ctx.workflow, ctx.run_id)
    scope_before = scope_var.get()
    tokens: tuple[Token[Any], ...] = (_run_var.set(ctx), _active_var.set(ctx), RUN_OF.set(run))
    try:
        leave_scope = enter_root(ctx) if ctx is not None else set_scope(None)
        if ctx is not None:
            ctx._root, ctx.open = current(), True

        def reset() -> None:  # may be run again, whole (see `plan.drive_sync`)
            if ctx is not None:
                ctx.open = False
                run_left(run)
            leave_scope()
            reset_vars(tokens)

        return reset
    except BaseException:
        scope_var.set(scope_before)
        RUN_OF.reset(tokens[2])
        _active_var.reset(tokens[1])
        _run_var.reset(tokens[0])
        raise
