"""Failed attempts as a run's history keeps them: each failed try of a step
or block, written next to its position (`attempts` records) so that
`history()` and `durable show` can list what went wrong before it succeeded
or gave up. A resume reads them back (`replay.load_context`) and adds to
them; no step's output is ever replayed from them. They also say how much
of its retry budget a step's call has used, so that a resume after a crash
makes only the tries left (`budget_used`)."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Mapping
from typing import Any

from .._storage.clock import now
from .._storage.keys import Position, attempts_name
from .._storage.records import Attempt, StepRecord, seal_record
from .._valuetext import error_message
from ..errors import LeaseLostError, StorageError
from . import unkept
from .context import RunState, current_state
from .stillheld import lease_lost

# What an error's text is kept as when the error holds a persist=False step's output.
UNKEPT_TEXT = "(its text holds what a persist=False step returned, which is never stored)"


def attempt_record(exc: BaseException) -> Attempt:
    """A failed try as history keeps it."""
    return Attempt(type(exc).__qualname__, *failure_text(exc), now())


def failure_text(exc: BaseException, ctx: RunState | None = None) -> tuple[str, str]:
    """The message and the traceback's end a failure is kept with (a failed
    try's, a run's). An error holding a persist=False step's output
    (`raise AuthError(token)`, by identity as `unkept` holds it) is kept
    with its frames and type only: its text would write the secret.
    `ctx`: the run (default: the one executing here)."""
    ctx = ctx if ctx is not None else current_state()
    if ctx is not None and ctx.unkept and unkept.holds(ctx, exc):
        frames = "".join(traceback.format_tb(exc.__traceback__)[-2:])
        return UNKEPT_TEXT, f"{frames}{type(exc).__qualname__}: {UNKEPT_TEXT}\n"[-4000:]
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return error_message(exc)[:2000], tb[-4000:]


def save_failures(
    ctx: RunState,
    pos: Position,
    failures: list[Attempt],
    *,
    name: str = "",
    started: float = 0.0,
    kind: str = "step",
    given_up: int | None = None,
    extra: Mapping[str, Any] | None = None,
    call: tuple[str, str] | None = None,
) -> None:
    """Keep the failed attempts at pos (history shows them as `kind`);
    `given_up`: how many of them belong to calls that gave up (all when not
    given: the call retries no more); `extra`: what history shows besides
    (the run id of a child run); `call`: the fingerprint and argument
    digest of the step's call that failed, whose budget the rest are."""
    fp, digest = call if call is not None else ("", None)
    rec = StepRecord(
        pos, "attempts", name, fp, digest, persisted=False, started=started, attempts=failures
    )
    if call is not None:
        ctx.tried_by[pos] = call
    rec.extra.update(extra or {})
    if kind != "step":
        rec.extra["kind"] = kind
    rec.extra["given_up"] = ctx.given_up[pos] = len(failures) if given_up is None else given_up
    ctx.failures[pos] = failures
    if not ctx.open:  # a task that outlived the body: the run is over, another may hold it
        return
    data = seal_record(rec.to_bytes(), ctx.store.signing_key)
    # History only: the failure being recorded matters more than a store
    # that cannot take it (the same fault usually caused it: disk full).
    try:
        with contextlib.suppress(StorageError):
            ctx.store.replace_record(ctx.workflow, ctx.run_id, attempts_name(pos), data)
    except LeaseLostError as e:  # another process may run the run now: final, even if caught
        raise lease_lost(ctx, pos, e) from None


def keep_failure(
    ctx: RunState,
    pos: Position,
    exc: BaseException,
    *,
    name: str,
    started: float,
    kind: str,
    extra: Mapping[str, Any] | None = None,
) -> list[Attempt]:
    """Add a failed try of a `loop_over` block or a child run at pos to the
    failures history keeps there; returns them all. The failure itself
    matters more than a store that cannot take it (the same fault usually
    caused it: disk full)."""
    failures = [*ctx.failures.get(pos, []), attempt_record(exc)]
    with contextlib.suppress(StorageError):
        save_failures(ctx, pos, failures, name=name, started=started, kind=kind, extra=extra)
    return failures


def budget_used(ctx: RunState, pos: Position, call: tuple[str, str]) -> tuple[int, int]:
    """(failed tries at pos, how many of them count against the retry budget
    of the call there now, of this fingerprint and argument digest). A call
    that gave up ended its budget: a later call of the run (fixed, resumed)
    gets a budget of its own. One that did not (the process died, the run
    was interrupted between tries) left it open, and the resume goes on
    with it, for the same call only: another (other arguments, the code
    fixed) has a budget of its own, as a `loop_over` item's kept budget is
    its own item's. Under rebase the code may differ. A record written
    before budgets were kept (no `given_up`) counts as given up, as it was
    then; one written before they kept their call is taken for this one's."""
    earlier = len(ctx.failures.get(pos, ()))
    by = ctx.tried_by.get(pos)
    if by is not None and (by[1] != call[1] or (by[0] != call[0] and ctx.policy != "rebase")):
        return earlier, 0  # another call's tries: given up, as far as this one goes
    return earlier, budget_spent(earlier, ctx.given_up.get(pos, earlier))


def budget_spent(earlier: int, given_up: int) -> int:
    """How many of `earlier` failed tries count against the budget of the
    call made now, `given_up` of them having ended calls that gave up
    (a step's, `budget_used`, and a `loop_over` item's, `_fanout.tries`)."""
    return earlier - min(max(given_up, 0), earlier)
