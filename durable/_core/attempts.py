"""Failed attempts as a run's history keeps them: each failed try of a step
or block, written next to its position (`attempts` records) so that
`history()` and `durable show` can list what went wrong before it succeeded
or gave up. A resume reads them back (`replay.load_context`) and adds to
them; no step's output is ever replayed from them."""

from __future__ import annotations

import contextlib
import traceback

from .._storage.clock import now
from .._storage.keys import Position, attempts_name
from .._storage.records import Attempt, StepRecord, seal_record
from ..errors import StorageError
from .context import RunState


def attempt_record(exc: BaseException) -> Attempt:
    """A failed try as history keeps it."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return Attempt(type(exc).__qualname__, str(exc)[:2000], tb[-4000:], now())


def save_failures(
    ctx: RunState,
    pos: Position,
    failures: list[Attempt],
    *,
    name: str = "",
    started: float = 0.0,
    kind: str = "step",
) -> None:
    """Keep the failed attempts at pos (history shows them as `kind`)."""
    rec = StepRecord(
        pos, "attempts", name, "", None, persisted=False, started=started, attempts=failures
    )
    if kind != "step":
        rec.extra["kind"] = kind
    ctx.failures[pos] = failures
    if not ctx.open:  # a task that outlived the body: the run is over, another may hold it
        return
    data = seal_record(rec.to_bytes(), ctx.store.signing_key)
    # History only: the failure being recorded matters more than a store
    # that cannot take it (the same fault usually caused it: disk full).
    with contextlib.suppress(StorageError):
        ctx.store.replace_record(ctx.workflow, ctx.run_id, attempts_name(pos), data)
