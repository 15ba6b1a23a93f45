"""An exclusive lock on an open file that the OS drops the instant its holder
dies, on POSIX and on Windows.

POSIX: `flock` on the whole file. Windows, where there is no `fcntl`:
`msvcrt.locking` of one byte far past the data. Windows locks are mandatory
(a locked range cannot be read by anyone else), and a lock file's first bytes
hold its holder's name for a contender to read. The choice is made once, at
import; Windows never imports `fcntl`."""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

# Past any data a lock file holds. Windows lets a lock lie beyond the end of
# a file, and its C runtime takes the position as a 32-bit long.
WINDOWS_LOCK_OFFSET = 2**30

if find_spec("fcntl") is not None:
    import fcntl

    KIND = "flock"

    def lock_exclusive(fd: int, blocking: bool) -> bool:
        """Take the lock; False when another open file holds it and not blocking."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True

    def unlock(fd: int) -> None:
        fcntl.flock(fd, _UN)

    def lock_wait(fd: int) -> None:
        """Take the lock, waiting for it (a run log's every append)."""
        fcntl.flock(fd, _EX)

    _EX, _UN = fcntl.LOCK_EX, fcntl.LOCK_UN
    # A run log's every append takes and lets go the lock: through the C
    # function itself, not a Python call around it (`log.RunLog.create_open`).
    flock: Callable[[int, int], None] = fcntl.flock
    EX, UN = _EX, _UN

else:
    # Loaded by name: type stubs describe msvcrt only when checking for Windows.
    msvcrt: Any = importlib.import_module("msvcrt")

    KIND = "msvcrt"

    # What `locking` sets when the range is held: EACCES for LK_NBLCK, and
    # EDEADLOCK for LK_LOCK after its own ten tries a second apart.
    _HELD = frozenset({errno.EACCES, errno.EDEADLOCK})

    def lock_exclusive(fd: int, blocking: bool) -> bool:
        """Take the lock; False when another open file holds it and not blocking."""
        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK
        while True:
            try:
                _at_lock_byte(fd, mode)
            except OSError as e:
                if e.errno not in _HELD:
                    raise
                if not blocking:
                    return False
                continue
            return True

    def unlock(fd: int) -> None:
        _at_lock_byte(fd, msvcrt.LK_UNLCK)

    def lock_wait(fd: int) -> None:
        """Take the lock, waiting for it (a run log's every append)."""
        lock_exclusive(fd, blocking=True)

    EX, UN = 2, 8  # flock's numbers, to tell the two apart

    def _flock(fd: int, operation: int) -> None:
        lock_wait(fd) if operation == EX else unlock(fd)

    flock = _flock

    def _at_lock_byte(fd: int, mode: int) -> None:
        # `locking` works from the file position: move there, and back, so
        # that nobody reading or writing the file through `fd` is moved.
        here = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, mode, 1)
        finally:
            os.lseek(fd, here, os.SEEK_SET)
