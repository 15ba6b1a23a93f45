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
or the platform has no extended attributes, nothing is marked: as before.

A file written over in place keeps its attribute (`cp` onto a file that
exists, `rsync --inplace`): another log of the run put there (the store
copied elsewhere without attributes, the run restarted there, copied back)
was refused as having lost synced records. So a mark names the first entry
of the log it measured (`logentry.first_entry`): a log that starts with
another intact entry is another log, which the mark says nothing of; one
whose first entry is gone or damaged is held to it (fail closed)."""

from __future__ import annotations

import contextlib
import os

from .logentry import HEAD, first_entry

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
            first = first_entry(os.pread(fd, HEAD, 0))
            _SET(fd, _ATTR, b"%d" % written if first is None else b"%d:%d" % (written, first))


def marked(path: str) -> int:
    """How many bytes of the log at `path` a sync is known to have covered
    (0: none known)."""
    if _GET is None:
        return 0
    try:
        raw = _GET(path, _ATTR, follow_symlinks=False)
    except OSError:
        return 0
    at, _, first = raw.partition(b":")
    if not (at.isdigit() and len(at) < 20):
        return 0
    if first.isdigit() and len(first) < 11 and _another(path, int(first)):
        return 0  # another log written over the one marked
    return int(at)


def _another(path: str, first: int) -> bool:
    """Whether the log at `path` starts with an intact entry other than
    `first`, the one the mark measured: unreadable, it is held to the mark."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        found = first_entry(os.pread(fd, HEAD, 0))
    except OSError:
        return False
    finally:
        os.close(fd)
    return found is not None and found != first
