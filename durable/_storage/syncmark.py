"""How far a run's local log is known synced by the syncs its attempt made
under "batch" between its start and its end (`durability.Syncer`), which
the run's manifest does not note (`noted.note_synced`: at an attempt's
start and end). Without it, damage in bytes such a sync covered was read
as a power loss's past what was synced (`powerloss`), and the steps
recorded there, durable since, ran again; a power loss cannot damage
them, so it is real damage, refused as under "fsync".

Kept as an extended attribute of the log file itself: no file more in the
run's folder, none left behind when the log is removed, and a log made
anew starts without one. Set after the sync returns and never synced
itself, so a power loss may leave an older mark (damage past it is read
as before), never one past what a sync covered. Where the filesystem or
the platform has no extended attributes, nothing is marked: as before."""

from __future__ import annotations

import contextlib
import os

from .logentry import damaged

_ATTR = "user.durable.synced"
_SET = getattr(os, "setxattr", None)
_GET = getattr(os, "getxattr", None)


def sync_marked(fd: int) -> None:
    """fdatasync the log open at `fd`, then mark the bytes it covered: all
    those written before it began (another thread's too)."""
    size = os.fstat(fd).st_size
    os.fdatasync(fd)
    if _SET is not None:
        with contextlib.suppress(OSError):  # unmarked: read as before
            _SET(fd, _ATTR, b"%d" % size)


def marked(path: str | int) -> int:
    """How many bytes of the log at `path` (or open at that descriptor) a sync
    under "batch" is known to have covered (0: none known)."""
    if _GET is None:
        return 0
    try:
        raw = _GET(path, _ATTR) if isinstance(path, int) else _GET(path, _ATTR, follow_symlinks=False)
    except OSError:
        return 0
    return int(raw) if raw.isdigit() and len(raw) < 20 else 0


def uncovered(
    fd: int, tail: bytes, intact: int, base: int, unsynced: int | None, run_id: str, path: str
) -> None:
    """Raise when the tail a reader is about to cut off the log open at `fd`
    (a torn or zero-filled one, damage past `unsynced`: `logentry.locate`),
    read from byte `base` on, begins in bytes a sync covered, noted
    (`unsynced`) or marked: neither a writer killed mid-append nor a power
    loss leaves it there. Cut off, the steps recorded there, durable since,
    ran a second time without a word."""
    synced = max(unsynced or 0, marked(fd))
    if base + intact < synced:
        why = f"the log ends early, in the {synced} bytes a sync covered"
        raise damaged(run_id, tail, intact, base, path, why)
