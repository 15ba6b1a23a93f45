"""What every `durable` command shares: the usage error, which errors are
refusals (exit code 2), and how an error is printed."""

from __future__ import annotations

import sys
import traceback

from ..errors import (
    ArtifactMissingError,
    DefinitionChangedError,
    DurableError,
    NondeterminismError,
    RunLockedError,
    RunNotFoundError,
)


class UsageError(DurableError):
    """Bad command line input; exit code 2."""


_REFUSALS = (DefinitionChangedError, NondeterminismError, RunLockedError, RunNotFoundError)


def is_refusal(e: BaseException, run_id: str | None = None) -> bool:
    """Errors that leave the run as it was: nothing to fix in the code's
    logic, the run is resumable as soon as the condition is gone. One about
    another run (a workflow called inside this one) is that run's business."""
    if isinstance(e, ArtifactMissingError):
        refused = e.state != "not produced"  # that one is the step's own failure
    else:
        refused = isinstance(e, _REFUSALS)
    return refused and (run_id is None or getattr(e, "run_id", run_id) == run_id)


# Errors are written for Python callers; on the command line the same advice
# names the flags (`--wait SECONDS`, not `with_options(wait=SECONDS)`).
_FLAGS = {
    "pass with_options(wait=SECONDS) to wait for the lease": "run again with --wait SECONDS",
    "call the workflow without resume() to start it": "run it without --resume to start it",
    "restart=True (durable run --restart)": "--restart",
    "start fresh with restart=True": "start fresh with --restart",
    "(new_run_id=, durable fork --new-run-id)": "(--new-run-id)",
    "(at=, durable fork --at)": "(--at)",
    "wait longer with with_options(wait=SECONDS)": "run again with a longer --wait SECONDS",
}


# Only `durable run` has --wait: other commands give the same advice without it.
_WITHOUT_WAIT = {
    ", or pass with_options(wait=SECONDS) to wait for the lease": ", then run this command again",
}


def in_flags(text: str, *, can_wait: bool = True) -> str:
    """An error's message as the command line (a command with or without
    --wait) says it."""
    for python, flag in () if can_wait else _WITHOUT_WAIT.items():
        text = text.replace(python, flag)
    for python, flag in _FLAGS.items():
        text = text.replace(python, flag)
    return text


def print_error(exc: BaseException, debug: bool, code: int, *, can_wait: bool = False) -> int:
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
    lines = in_flags(str(exc), can_wait=can_wait).strip().splitlines() or [type(exc).__name__]
    print(f"durable: {lines[0]}", file=sys.stderr)
    if len(lines) > 1:
        print(f"  {lines[-1].strip()}", file=sys.stderr)
    return code
