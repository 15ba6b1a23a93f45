"""Files under a local store's root, kept inside it: folders are made and checked
with `lstat` (a symlink below the root is refused, never followed), files are
opened with `O_NOFOLLOW`, writes are atomic (temp file, fsync, rename or hard
link, fsync of the folder), and the faults a user can fix get advice of their own."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable

from ..errors import StorageError
from .lease import FILE_MODE
from .log import NOFOLLOW, fsync_dir

# A manifest file's identity: (inode, mtime in ns, size). Every write renames
# a new file into place, so a different identity means another writer. A
# cache entry's adds its change time (`exact`).
Identity = tuple[int, ...]

# What to do about the local faults a user can fix; a fork, which keeps nothing
# of itself when it fails, says to run it again instead of AGAIN (`fork_run`).
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
        advice = _not_ours(e.filename) or advice
    elif e.errno == errno.ENOENT and root and not os.path.isdir(root):  # under /proc, or a mount gone
        advice = f"the store's folder {root} does not exist and cannot be made: check the store's path (--store, store=, $DURABLE_STORE)"  # fmt: skip
    return StorageError(url, f"{what}: {e}", advice)


def _not_ours(path: object) -> str | None:
    """Why a store shared through a group refuses a member a file another made:
    "the store's folder" is group-writable there, so checking it found nothing;
    the file's owner and mode say what happened. A file not made yet is refused
    by the folder it goes in (a run's folder in another member's workflow folder)."""
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


def parts(root: str, folder: str) -> list[str]:
    rel = os.path.relpath(folder, root)
    if rel == ".":
        return []
    if rel == ".." or rel.startswith(".." + os.sep):
        raise OSError(errno.EXDEV, "outside the store's root", folder)
    return rel.split(os.sep)


def make_folder(root: str, folder: str, *, sync: bool = False) -> None:
    """Make folder and the folders above it up to the root, refusing (ELOOP)
    when one inside the store is a symlink or not a folder: nothing is ever
    written outside the root through a planted link. `sync`: each folder
    made is synced into its parent (`synced_into`)."""
    made = [] if os.path.isdir(root) else [root]
    os.makedirs(root, exist_ok=True)
    path = root
    for part in parts(root, folder):
        path = os.path.join(path, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
            made.append(path)
        real_folder(path)
    if sync:
        synced_into(made)


def synced_into(made: list[str]) -> None:
    """Sync the parent of each folder made: the fsyncs of what is written
    in a folder do not cover the folder's own entry in its parent, and a
    power loss could take a new run's folder with the records its steps
    returned after (the store's root too, made by its first run)."""
    for parent in dict.fromkeys(os.path.dirname(p) for p in made):
        fsync_dir(parent)


def file_in_the_way(root: str) -> str | None:
    """The file standing at the store's root or at a folder above it, which
    no write can get past (else None): the store's path is the user's
    setting, said as such before anything is read or written."""
    path = root
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None if os.path.isdir(path) else path


def folder_exists(root: str, folder: str) -> bool:
    """Whether folder exists with no symlink between it and the root (ELOOP
    on one), for deletes and listings. A root that is not a folder raises
    ENOTDIR: an empty listing would hide that the store is not there."""
    try:  # one stat: a root removed and made again meanwhile (`rm` against a start) is a folder
        is_folder = stat.S_ISDIR(os.stat(root).st_mode)
    except FileNotFoundError:
        if not os.path.islink(root):
            return False
        is_folder = False  # a link to nothing
    if not is_folder:
        raise NotADirectoryError(errno.ENOTDIR, "the store's root is not a folder", root)
    path = root
    for part in parts(root, folder):
        path = os.path.join(path, part)
        try:
            real_folder(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
    return True


def real_folder(path: str) -> None:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, "a symlink inside the store", path)
    if not stat.S_ISDIR(mode):
        raise OSError(errno.ENOTDIR, "not a folder", path)


def walk(
    root: str, base: str, refused: Callable[[str, OSError], list[str]] | None = None
) -> list[str]:
    """Every file under base as a key, never following or listing a symlink
    (nor a writer's temp file). A folder below base this process may not
    list is `refused`'s to answer for (the keys standing for it), else fails."""
    out, stack = [], [base]
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            if folder == base:
                raise
            continue  # removed since its parent was listed (another run's `rm`, `gc`)
        except PermissionError as e:
            if folder == base or refused is None:
                raise
            out += refused(folder, e)
            continue
        with entries:
            for entry in entries:
                if entry.is_symlink() or entry.name.startswith(".tmp-"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    out.append(os.path.relpath(entry.path, root).replace(os.sep, "/"))
    return out


def read(path: str, *, exact: bool = False) -> tuple[bytes, Identity] | None:
    """The file's bytes and identity; None when absent (or a symlink: not an
    object of the store)."""
    fd = _open(path)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        return _read_all(fd, st.st_size), identity(st, exact=exact)
    finally:
        os.close(fd)


_SMALL = 1 << 16


def read_bytes(path: str) -> bytes | None:
    """`read` without the identity: a small file (a cache entry, read on
    every hit) in one read and no `fstat`; a larger one as `read` does."""
    fd = _open(path)
    if fd is None:
        return None
    try:
        data = os.read(fd, _SMALL)
        if len(data) < _SMALL and not os.read(fd, 1):
            return data  # at its end (the read of 1 byte says so)
        os.lseek(fd, 0, os.SEEK_SET)  # a large blob: once more, in one piece
        return _read_all(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None
        raise


def _read_all(fd: int, size: int) -> bytes:
    # Straight into one bytes object, without a buffered file object around
    # it: cheaper for a small entry, one copy for a large blob. Read to the
    # end, as `f.read()` does: a read may return less than asked for.
    # The read that finds the end asks for little: asking for 1 MB
    # allocates 1 MB for it (a manifest is read on every call of a workflow).
    data = os.read(fd, size)
    parts, more = [data], 1 << 12
    while chunk := os.read(fd, more):
        parts.append(chunk)
        more = 1 << 20
    return data if len(parts) == 1 else b"".join(parts)


def identity(st: os.stat_result, *, exact: bool = False) -> Identity:
    """`exact` adds the change time, which nothing sets back: a file removed
    and another written in its place takes its inode number at once, and
    may have its size and its mtime (restored by `cp -p`, `tar`, `rsync
    -t`, or in the same tick of the clock). Not for a manifest, whose
    change time a `chmod` or a backup's hard link moves too: read as
    another writer, that would end the run."""
    if exact:
        return st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns
    return st.st_ino, st.st_mtime_ns, st.st_size


def current(path: str, *, exact: bool = False) -> Identity | None:
    """The identity `read` would give now (None for absent or a symlink)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return None if stat.S_ISLNK(st.st_mode) else identity(st, exact=exact)


def temp_file(folder: str, prefix: str = ".tmp-") -> tuple[int, str]:
    """A new file of a random name in folder, open for writing: (fd, path).
    Made with the process's umask (FILE_MODE), as the log and the lease are, not
    mkstemp's 0600 (which a rename keeps): a team mate's `durable runs`
    or a dashboard, running as another user of the group, reads the
    store's manifests and files too."""
    while True:
        path = os.path.join(folder, prefix + os.urandom(8).hex())
        try:
            return os.open(path, _NEW, FILE_MODE), path
        except FileExistsError:  # 2**64 names: only ever a stale temp file
            continue


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def write(path: str, data: bytes, *, exclusive: bool, sync: bool = True) -> Identity | None:
    """Write atomically; the new file's identity, or None when `exclusive`
    and something is already there. The folder must exist (made safely).
    Not `sync`: neither the file nor its folder is fsync'ed (a run under
    durability "none"), so a power loss may leave it missing, empty, zeroed
    or the one before; a process crash still sees it whole or not at all."""
    folder = os.path.dirname(path)
    fd, tmp = temp_file(folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
            made = identity(os.fstat(f.fileno()))
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return None
        else:
            os.replace(tmp, path)  # replaces a planted symlink, never follows it
            tmp = ""
    finally:
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    if sync:
        fsync_dir(folder)
    return made


def prune(folder: str, root: str, *, sync: bool = False) -> str | None:
    """Remove folder and the empty folders above it, up to the root;
    `sync`: durably (the folder left is synced), so that a removed run's
    folder does not come back after a power loss. Returns why folder stays
    when the user can fix it (a parent that cannot be written), else None."""
    removed = False
    while folder.startswith(root) and folder != root:
        try:
            os.rmdir(folder)
        except OSError as e:
            if removed or e.errno in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                break
            advice = _not_ours(folder) or ADVICE.get(e.errno or 0, "see the error")
            return f"the emptied folder {folder} stays ({e.strerror}): {advice}, then remove it (rmdir {folder})"
        removed, folder = True, os.path.dirname(folder)
    if sync and removed:
        fsync_dir(folder)
    return None
