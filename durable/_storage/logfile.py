"""The file-level steps of a run log (`log.RunLog`): opening it for
appends (never through a symlink), taking and dropping its lock, cutting a
torn tail off, writing an entry whole, and syncing the folder a new log was
made in."""

from __future__ import annotations

import contextlib
import os

from .lease import FILE_MODE, inherited_no_more, not_inherited
from .oslock import lock_exclusive, unlock

# A symlink planted in a store is never followed by a write (0 where the
# platform has no such flag).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_for_append(path: str) -> tuple[int, bool]:
    """(fd, whether this call created the file). Never through a symlink."""
    flags = os.O_RDWR | os.O_APPEND | NOFOLLOW | CLOEXEC
    try:
        return os.open(path, flags), False
    except FileNotFoundError:
        return os.open(path, flags | os.O_CREAT, FILE_MODE), True


def cut(fd: int, path: str, length: int) -> None:
    """Truncate the log to length; fd may be read-only (a reader's)."""
    if os.fstat(fd).st_size <= length:
        return
    writable = os.open(path, os.O_WRONLY | NOFOLLOW | CLOEXEC)
    try:
        os.ftruncate(writable, length)
        os.fsync(writable)
    finally:
        os.close(writable)


def lock(fd: int, *, register: bool = True) -> None:
    if register:
        not_inherited(fd)  # a child forked while we hold it must not keep the lock
    lock_exclusive(fd, blocking=True)


def release(fd: int) -> None:
    # Unlocked before closing: Windows frees a closed handle's locks only
    # "eventually"; flock would drop it at close anyway.
    with contextlib.suppress(OSError):  # never taken (the lock call failed)
        unlock(fd)
    inherited_no_more(fd)
    os.close(fd)


def fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, frame: bytes | tuple[bytes, bytes]) -> None:
    """Write the whole frame or nothing: a short write (disk full, a file size
    limit) is cut back, or the next entry would land after torn bytes and
    every later record would be unreadable. A large entry's head and data
    (`logentry.frame_entry`) go in by one writev, not joined first."""
    if isinstance(frame, tuple):
        if _WRITEV is None:  # Windows
            frame = b"".join(frame)
        else:
            done = _WRITEV(fd, frame)  # nothing written when it raises
            if done != len(frame[0]) + len(frame[1]):
                _write_rest(fd, b"".join(frame), done)
            return
    done = os.write(fd, frame)  # nothing written when it raises
    if done != len(frame):  # the usual case: all of it at once
        _write_rest(fd, frame, done)


_WRITEV = getattr(os, "writev", None)


def _write_rest(fd: int, frame: bytes, done: int) -> None:
    view = memoryview(frame)[done:]
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        os.ftruncate(fd, os.fstat(fd).st_size - (len(frame) - len(view)))
        raise
