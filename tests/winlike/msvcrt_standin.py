"""A stand-in for Windows' `msvcrt.locking`, so that durable's Windows code
path runs in the tests on Linux.

Windows locks a byte range per open file (handle), and drops it when the
handle is closed or its process dies. Linux's open-file-description locks
(`F_OFD_SETLK`) do the same, so they are used underneath. Only the lock
modes durable uses are implemented, with the errors Windows gives: EACCES
for LK_NBLCK on a held range; EDEADLOCK for LK_LOCK after ten tries a second
apart."""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import time

LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4

#: Every call as (mode, file position, nbytes), for the tests to read.
calls: list[tuple[int, int, int]] = []


def locking(fd: int, mode: int, nbytes: int) -> None:
    start = os.lseek(fd, 0, os.SEEK_CUR)
    calls.append((mode, start, nbytes))
    if mode == LK_UNLCK:
        _ofd(fd, fcntl.F_UNLCK, start, nbytes)
        return
    if mode not in (LK_LOCK, LK_NBLCK):
        raise NotImplementedError(f"the stand-in has no mode {mode}")
    for attempt in range(10 if mode == LK_LOCK else 1):
        if attempt:
            time.sleep(1)  # what Windows does between the tries of LK_LOCK
        try:
            _ofd(fd, _kind(fd), start, nbytes)
            return
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
    code = errno.EDEADLOCK if mode == LK_LOCK else errno.EACCES
    raise OSError(code, os.strerror(code))


def _kind(fd: int) -> int:
    # Windows locks a handle opened for reading as exclusively as any other;
    # Linux refuses a write lock there, and a read lock is the closest match
    # (it still excludes every writer's lock).
    readonly = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    return fcntl.F_RDLCK if readonly else fcntl.F_WRLCK


def _ofd(fd: int, kind: int, start: int, length: int) -> None:
    # struct flock: short l_type, short l_whence, off_t l_start, off_t l_len,
    # pid_t l_pid (0 for open-file-description locks), padded to 32 bytes.
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))
