"""What a run log read shorter than it was written says: its entries end
before what a sync covered (`short_of`), or another process truncated it
under its writer (`shrunk`). Either took records already written, whose
steps must not run again, and a log is not repaired in place (`ADVICE`,
which a damaged entry's error gives too: `logentry`)."""

from __future__ import annotations

from ..errors import CorruptRecordError

# What a damaged log's error advises: a log is not repaired in place.
ADVICE = (
    "The entries before it are intact, but a run log is not repaired in place: "
    "start the run again with restart=True (durable run ... --restart)"
)


def short_of(run_id: str, path: str, intact: int, synced: int) -> CorruptRecordError:
    """The log read ends (a zero-filled or torn tail) at byte `intact`,
    before byte `synced`, which a sync covered (`syncmark`):
    a power loss leaves neither there, so the records past it are lost,
    not given up by the level, and their steps must not run again."""
    return CorruptRecordError(
        run_id,
        None,
        f"{path}, entry at byte {intact}",
        f"the log's entries end there (zeroed or cut short), before byte {synced}, "
        "which a sync covered",
        advice=ADVICE,
    )


def shrunk(run_id: str, path: str, had: int, now: int) -> CorruptRecordError:
    """The log is `now` bytes long under a holder (or any writer) whose
    index covers `had` intact bytes of the same file: another process
    truncated it, taking records already written, whose steps must not
    run again (read from the start, as before, they were simply gone)."""
    return CorruptRecordError(
        run_id,
        None,
        f"{path}, entry at byte {now}",
        f"the log was truncated to {now} bytes by another process while it was "
        f"being written ({had} bytes of entries were written)",
        advice=ADVICE,
    )
