"""How far a run's local log is known synced by the syncs its attempt made
between its start and its end (`durability.Syncer`), which the run's
manifest does not note (`noted.note_synced`: at an attempt's start and
end): every sync under "batch", and under "fsync" the first one and then
one a `sync_interval` at most (`Syncer.marking`: no system call more per
record). Without it, damage in bytes such a sync covered was read as a
power loss's past what was synced (`powerloss`), and the steps recorded
there, durable since, ran again; a power loss cannot damage them, so it
is real damage, refused.

Kept as an extended attribute of the log file itself: no file more in the
run's folder, none left behind when the log is removed, and a log made
anew starts without one. Set after the sync returns and never synced
itself, so a power loss may leave an older mark (damage past it is read
as before), never one past what a sync covered. A log whose entries end
before its mark (zeroed from there on, or cut short) lost synced records:
refused too (`logrecords`), not read as a torn tail. Where the filesystem
or the platform has no extended attributes, nothing is marked: as before."""

from __future__ import annotations

import contextlib
import os

_ATTR = "user.durable.synced"
_SET = getattr(os, "setxattr", None)
_GET = getattr(os, "getxattr", None)


def sync_marked(fd: int, written: int | None) -> None:
    """fdatasync the log open at `fd`, then (`written` given) mark the bytes
    it covered: `written`, the end of the entries this process had written
    whole before it began (another thread's too). Not the file's size: a
    write in progress shows part of its entry there, and a kill -9 leaves
    that entry torn, cut off below a mark a reader holds the log to."""
    os.fdatasync(fd)
    if _SET is not None and written:
        with contextlib.suppress(OSError):  # unmarked: read as before
            _SET(fd, _ATTR, b"%d" % written)


def marked(path: str) -> int:
    """How many bytes of the log at `path` a sync is known to have covered
    (0: none known)."""
    if _GET is None:
        return 0
    try:
        raw = _GET(path, _ATTR, follow_symlinks=False)
    except OSError:
        return 0
    return int(raw) if raw.isdigit() and len(raw) < 20 else 0
