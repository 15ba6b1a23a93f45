"""A recorded output read back for a replay. One that cannot be (a damaged
or forged record, or a value whose class changed so that it cannot be
loaded) is final, as a damaged record found by `replay.lookup` is: a body
that caught it (`except Exception`) completed the run with its fallback
for good. Only a cached output whose blob was pruned runs again."""

from __future__ import annotations

from typing import Any

from .._storage import codec
from .._storage.keys import record_name
from .._storage.records import StepRecord, decode_stored, load_stored
from ..errors import CorruptRecordError, IntegrityError
from .context import RunState

# What `load_value(..., pruned=True)` returns for a cached output whose blob is gone.
PRUNED: Any = object()


def load_value(ctx: RunState, rec: StepRecord, *, pruned: bool = False) -> Any:
    """The recorded output; with `pruned` (a step's replay), PRUNED for a
    cached output whose blob was pruned, which the step then runs again.
    Decided here only: a step deciding again after this made a third look
    at a blob known to be gone (two requests each on an object store)."""
    assert rec.encoding is not None
    if rec.blob is None and rec.value is not None and rec.encoding == codec.MSGPACK:
        # Plain data inline (most records): nothing to fetch, no policy, and
        # no key to name, so none is spelled out for every replayed step.
        return decode_stored(ctx.store, rec.encoding, rec.value, name="")
    where = (ctx.workflow, ctx.run_id)
    key = f"{ctx.workflow}/{ctx.run_id}/{record_name(rec.position)}"
    try:
        return load_stored(
            ctx.store, where, rec.encoding, rec.value, rec.blob, position=rec.position, name=key
        )
    except (CorruptRecordError, IntegrityError) as e:
        if pruned and _blob_gone(ctx, rec):
            return PRUNED
        ctx.refuse(e)
        raise


def _blob_gone(ctx: RunState, rec: StepRecord) -> bool:
    """Whether a record served from the cache lost the blob it points at
    (pruned while this run was referring to it): then the step runs again."""
    if not rec.extra.get("cache") or rec.blob is None:
        return False
    return ctx.store.get_blob(ctx.workflow, ctx.run_id, rec.blob) is None
