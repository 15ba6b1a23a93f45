"""A run's operation records on local disk as one append-only log.

One file per record costs a file creation, a rename and two fsyncs per step;
appending to one log costs a write and one fdatasync, and a resume reads one
file instead of thousands. Each entry is framed and CRC-checked; the record
inside is sealed as everywhere else. Only the process holding the run's lease
appends, so entries never interleave.

Entry: magic(2) | crc32(4) | name length(2) | data length(4) | name | data,
with data length 0xFFFFFFFF marking a deletion. A last entry cut short (the
process died mid-write) is ignored and cut off by the next writer; a complete
entry whose checksum fails is damage, and raises rather than being dropped."""

from __future__ import annotations

import contextlib
import os
import struct
import zlib

from ..errors import CorruptRecordError
from .keys import position_of
from .lease import inherited_no_more, not_inherited
from .oslock import lock_exclusive, unlock

_MAGIC = b"\xd7\x1e"
_FIELDS = struct.Struct(">2sHII")  # magic, name length, data length, body crc
_CRC = struct.Struct(">I")  # crc of the fields above, so lengths are trusted
_HEAD = _FIELDS.size + _CRC.size
_GONE = 0xFFFFFFFF
LOG_NAME = "records.log"
# A symlink planted in a store is never followed by a write (0 where the
# platform has no such flag).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _damaged(
    run_id: str, blob: bytes, offset: int, base: int, path: str, why: str
) -> CorruptRecordError:
    """Name the run, the position (when the entry's name is still legible)
    and the byte offset in the log file, with advice that works: a log is not
    repaired in place, so the way on is to start the run again."""
    _, name_len, _, _ = _FIELDS.unpack_from(blob, offset)
    raw = blob[offset + _HEAD : offset + _HEAD + name_len]
    try:
        position = position_of(raw.decode())
    except UnicodeDecodeError:
        position = None
    return CorruptRecordError(
        run_id,
        position,
        f"{path}, entry at byte {base + offset}",
        why,
        advice=(
            "The entries before it are intact, but a run log is not repaired in place: "
            "start the run again with restart=True (durable run ... --restart)"
        ),
    )


def encode_entry(name: str, data: bytes | None) -> bytes:
    raw = name.encode()
    body = raw + (data or b"")
    size = _GONE if data is None else len(data)
    fields = _FIELDS.pack(_MAGIC, len(raw), size, zlib.crc32(body))
    return fields + _CRC.pack(zlib.crc32(fields)) + body


def parse(
    blob: bytes,
    run_id: str,
    records: dict[str, bytes] | None = None,
    base: int = 0,
    path: str = LOG_NAME,
) -> tuple[dict[str, bytes], int]:
    """Apply the entries of blob (the log from byte `base` on) to records;
    return them and the length of the intact prefix of blob. `path` (the log
    file) only serves the message of a damaged entry."""
    records = {} if records is None else records
    offset = 0
    while offset < len(blob):
        entry = _entry_at(blob, offset, run_id, base, path)
        if entry is None:
            break
        name, data, offset = entry
        if data is None:
            records.pop(name, None)
        else:
            records[name] = data
    return records, offset


def _entry_at(
    blob: bytes, offset: int, run_id: str, base: int, path: str
) -> tuple[str, bytes | None, int] | None:
    """The entry at offset, or None for a torn tail; raises on damage."""
    left = len(blob) - offset
    if left < _HEAD:
        return None
    magic, name_len, size, body_crc = _FIELDS.unpack_from(blob, offset)
    head_ok = _CRC.unpack_from(blob, offset + _FIELDS.size)[0] == zlib.crc32(
        blob[offset : offset + _FIELDS.size]
    )
    if magic != _MAGIC or not head_ok:
        if blob.count(b"\0", offset) == left:
            return None  # a zero-filled tail after a power loss
        raise _damaged(run_id, blob, offset, base, path, "damaged entry header")
    start = offset + _HEAD
    end = start + name_len + (0 if size == _GONE else size)
    if end > len(blob):
        return None
    if zlib.crc32(blob[start:end]) != body_crc:
        raise _damaged(run_id, blob, offset, base, path, "entry checksum mismatch")
    data = None if size == _GONE else blob[start + name_len : end]
    return blob[start : start + name_len].decode(), data, end


class RunLog:
    """Appends to one run's log and keeps its index, so create-only is O(1).

    Every append, and the cut of a torn tail, happens under an exclusive
    flock on the log itself, after the index has caught up with whatever
    another writer (another store object, another process) appended since:
    the first record at a name wins here exactly as on an object store."""

    def __init__(self, path: str, run_id: str) -> None:
        self.path = path
        self.run_id = run_id
        self.records: dict[str, bytes] | None = None
        self.size = 0  # bytes of the log the index covers
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino) of that log

    def load(self) -> dict[str, bytes]:
        try:
            fd = os.open(self.path, os.O_RDONLY | NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            self.records, self.size, self.ident = {}, 0, None
            return {}
        try:
            _lock(fd)
            self.records = None  # read it all again: the caller wants the log as it is
            self._catch_up(fd)
        finally:
            _release(fd)
        assert self.records is not None
        return dict(self.records)

    def index(self) -> dict[str, bytes]:
        if self.records is None:
            self.load()
        assert self.records is not None
        return self.records

    def create(self, name: str, data: bytes) -> bytes | None:
        """Append name unless the log has it; return what is there if so."""
        return self._write([(name, data)], create=True)

    def append(self, items: list[tuple[str, bytes | None]]) -> None:
        self._write(items, create=False)

    def _write(self, items: list[tuple[str, bytes | None]], *, create: bool) -> bytes | None:
        fd, fresh = _open_for_append(self.path)
        try:
            _lock(fd)
            index = self._catch_up(fd)
            if create and (existing := index.get(items[0][0])) is not None:
                return existing
            frame = b"".join(encode_entry(name, data) for name, data in items)
            _write_all(fd, frame)
            os.fdatasync(fd)
            self.size += len(frame)
        finally:
            _release(fd)
        if fresh:  # the log's own name must survive a crash too
            fsync_dir(os.path.dirname(self.path))
        for name, data in items:
            if data is None:
                index.pop(name, None)
            else:
                index[name] = data
        return None

    def _catch_up(self, fd: int) -> dict[str, bytes]:
        """Bring the index up to the log's end (under the flock): read only
        what was appended since, or all of it when the file is another one;
        a torn tail (a writer died mid-append) is cut off."""
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        if self.records is None or ident != self.ident or st.st_size < self.size:
            self.records, self.size, self.ident = {}, 0, ident
        if st.st_size > self.size:
            try:
                tail = _read_at(fd, self.size, st.st_size)
                _, intact = parse(tail, self.run_id, self.records, self.size, self.path)
            except BaseException:
                self.records = None  # half applied: read it all again next time
                raise
            self.size += intact
            if self.size < st.st_size:
                _cut(fd, self.path, self.size)
        return self.records


def _open_for_append(path: str) -> tuple[int, bool]:
    """(fd, whether this call created the file). Never through a symlink."""
    flags = os.O_RDWR | os.O_APPEND | NOFOLLOW | _CLOEXEC
    try:
        return os.open(path, flags), False
    except FileNotFoundError:
        return os.open(path, flags | os.O_CREAT, 0o644), True


def _cut(fd: int, path: str, length: int) -> None:
    """Truncate the log to length; fd may be read-only (a reader's)."""
    if os.fstat(fd).st_size <= length:
        return
    writable = os.open(path, os.O_WRONLY | NOFOLLOW | _CLOEXEC)
    try:
        os.ftruncate(writable, length)
        os.fsync(writable)
    finally:
        os.close(writable)


def _lock(fd: int) -> None:
    not_inherited(fd)  # a child forked while we hold it must not keep the lock
    lock_exclusive(fd, blocking=True)


def _release(fd: int) -> None:
    # Unlocked before closing: Windows frees a closed handle's locks only
    # "eventually"; flock would drop it at close anyway.
    with contextlib.suppress(OSError):  # never taken (the lock call failed)
        unlock(fd)
    inherited_no_more(fd)
    os.close(fd)


def _read_at(fd: int, start: int, end: int) -> bytes:
    parts = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        parts.append(chunk)
        start += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, frame: bytes) -> None:
    """Write the whole frame or nothing: a short write (disk full, a file size
    limit) is cut back, or the next entry would land after torn bytes and
    every later record would be unreadable."""
    view = memoryview(frame)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        os.ftruncate(fd, os.fstat(fd).st_size - (len(frame) - len(view)))
        raise


def fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
