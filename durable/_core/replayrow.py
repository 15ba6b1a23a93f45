"""The replay rule, and its common case without a record made: a step's
record read from the log is compared as the row it was stored as, and only
its output is decoded. Anything but the plainest case (a record with
failed tries, artifacts, extra, no inline plain output, another kind, a
refusal made, events watched, positions taken from tasks, a mismatch) is
left to `replay.lookup`, which decodes the record and decides as before."""

from __future__ import annotations

from typing import Any

from .._storage.argdigest import digest_of
from .._storage.codec import MSGPACK, unpack
from .._storage.noted import CARRIED
from .context import RunState

# What `replayed` returns when `replay.lookup` must decide.
MISS: Any = object()
_NO_ITEMS: list[Any] = []  # compared with, never changed
_NO_EXTRA: dict[str, Any] = {}


def same_fields(
    stored_fp: str, stored_digest: str | None, fp: str, digest: str | None,
    stored_bytes: bytes | None = None, canonical: bytes | None = None,
) -> bool:  # fmt: skip
    """THE replay rule (DESIGN §2), on a record's fields: same fingerprint
    and argument digest. A record without a digest (written before every
    call had one) is another call. A record may keep the canonical bytes its
    digest is made of instead (`StepRecord.args_bytes`, never both): a call
    that has its own (`callbytes`) is compared on them, what the two digests
    would hash, so never "same" where the digests differ and no hash made.
    `digest` None: the call's is made of `canonical` when it is needed."""
    if stored_fp != fp:
        return False
    if stored_bytes is not None:
        if stored_digest is not None or type(stored_bytes) is not bytes:
            return False  # not a record of ours: `StepRecord.from_bytes` says so
        if canonical is not None:
            return stored_bytes == canonical
        stored_digest = digest_of(stored_bytes)
    if digest is None:
        assert canonical is not None  # a call has one or the other
        digest = digest_of(canonical)
    return stored_digest is not None and stored_digest == digest


def _only_marked(extra: object) -> bool:
    """Whether a record's extra holds the mark of the attempt that wrote it
    (`noted.carry`, in every record written under "fsync" and "batch")
    and nothing else: a record `Recorded` sheds it from, nothing to decide."""
    return type(extra) is dict and len(extra) == 1 and CARRIED in extra


def replayed(
    ctx: RunState, pos: int, name: str, fp: str, digest: str | None, canonical: bytes | None
) -> Any:
    """The output recorded at body position pos by this very call (same
    step name, `same_fields`), persisted, plain and inline, with nothing
    else in its record: what `replay.lookup` and `loadback.load_value`
    return for it, counted as they count it. MISS for anything else."""
    if ctx.refusal is not None or ctx.in_tasks or ctx.watched:
        return MISS
    row = ctx.records.row(pos)  # its mark, if any, is read from the body kept (`marks`)
    # The row (`StepRecord.to_bytes`): FORMAT, position, kind, name, fingerprint,
    # digest, encoding, value, blob, persisted, started, ended, attempts, artifacts, extra,
    # argument bytes (None in a row of format 1: `Recorded.row`).
    if (
        row is None
        or row[3] != name
        or not same_fields(row[4], row[5], fp, digest, row[15], canonical)
        or row[2] != "step"
        or row[9] is not True
        or row[6] != MSGPACK
        or row[8] is not None
        or row[7] is None
        or row[12] != _NO_ITEMS
        or row[13] != _NO_ITEMS
        or (row[14] != _NO_EXTRA and not _only_marked(row[14]))
    ):
        return MISS
    value = unpack(row[7])  # `load_value`'s plain inline output, decoded as it does
    ctx.replayed += 1
    return value
