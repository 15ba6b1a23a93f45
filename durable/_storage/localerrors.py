"""What a local store's failure says: the OS error, with advice for the
faults a user can fix (a full disk, a read-only mount, permissions, and on
a store shared through a group, the member whose umask made the file)."""

from __future__ import annotations

import errno
import os
import stat

from ..errors import StorageError

# What to do about the local faults a user can fix.
# A fork, which keeps nothing of itself when it fails, says to run it again
# instead of AGAIN (`fork_run`).
AGAIN = "call again to resume"
ADVICE = {
    errno.ENOSPC: f"the disk is full: free some space, then {AGAIN}",
    errno.EDQUOT: f"the disk quota is used up: free some space, then {AGAIN}",
    errno.EROFS: "the file system is read-only: remount it writable or use another folder",
    errno.EFBIG: f"a file size limit (ulimit -f) was reached: raise it, then {AGAIN}",
    errno.EIO: "the disk reported an I/O error (a failing disk, a network share gone): "
    f"check the device (dmesg) or the mount, then {AGAIN}",
    errno.EACCES: "check the permissions of the store's folder",
    errno.EPERM: "check the permissions of the store's folder",
    errno.ELOOP: "durable never writes or deletes through a symlink inside a store: remove it",
    errno.ENOTDIR: "a file stands where the store needs a folder: move it away",
    errno.EEXIST: "a file stands where the store needs a folder: move it away",
}


def local_error(url: str, what: str, e: OSError, root: str = "") -> StorageError:
    advice = ADVICE.get(e.errno or 0, "")
    if e.errno in (errno.EACCES, errno.EPERM):
        advice = not_ours(e.filename) or advice
    elif e.errno == errno.ENOENT and root and not os.path.isdir(root):  # under /proc, or a mount gone
        advice = f"the store's folder {root} does not exist and cannot be made: check the store's path (--store, store=, $DURABLE_STORE)"  # fmt: skip
    return StorageError(url, f"{what}: {e}", advice)


def not_ours(path: object) -> str | None:
    """Why a store shared through a group refuses a member a file another
    made: "the store's folder" is group-writable there, so checking it
    found nothing; the file's owner and mode say what happened. A file
    not made yet is refused by the folder it goes in (a run's folder in
    another member's workflow folder)."""
    uid = getattr(os, "geteuid", None)
    if not isinstance(path, str) or uid is None:
        return None
    try:
        if not os.path.lexists(path):
            path = os.path.dirname(path)
        st = os.stat(path)
    except OSError:
        return None
    if st.st_uid == uid():
        return None
    whose = f"{path} belongs to another user (uid {st.st_uid}, {stat.filemode(st.st_mode)})"
    if st.st_gid not in {os.getegid(), *os.getgroups()}:  # not shared with you
        return f"{whose}: check the permissions of the store's folder"
    return (
        f"{whose}: a store shared through a group needs every member to write with a "
        "umask that lets the group write (umask 002 or 007, not 022 or 027), and the "
        "files made under another one need `chmod -R g+w` on the store, by their owner"
    )
