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

import os
import struct
import zlib

from ..errors import CorruptRecordError
from .records import position_of

_MAGIC = b"\xd7\x1e"
_FIELDS = struct.Struct(">2sHII")  # magic, name length, data length, body crc
_CRC = struct.Struct(">I")  # crc of the fields above, so lengths are trusted
_HEAD = _FIELDS.size + _CRC.size
_GONE = 0xFFFFFFFF
LOG_NAME = "records.log"


def _damaged(run_id: str, blob: bytes, offset: int, path: str, why: str) -> CorruptRecordError:
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
        f"{path}, entry at byte {offset}",
        why,
        advice=(
            "The entries before it are intact, but a run log is not repaired in place: "
            "start the run again with restart=True (durable run ... --restart), or remove "
            "it with `durable rm RUN_ID`"
        ),
    )


def encode_entry(name: str, data: bytes | None) -> bytes:
    raw = name.encode()
    body = raw + (data or b"")
    size = _GONE if data is None else len(data)
    fields = _FIELDS.pack(_MAGIC, len(raw), size, zlib.crc32(body))
    return fields + _CRC.pack(zlib.crc32(fields)) + body


def parse(blob: bytes, run_id: str, path: str = LOG_NAME) -> tuple[dict[str, bytes], int]:
    """Return the live records and the length of the intact prefix. `path`
    (the log file) only serves the message of a damaged entry."""
    records: dict[str, bytes] = {}
    offset = 0
    while offset < len(blob):
        entry = _entry_at(blob, offset, run_id, path)
        if entry is None:
            break
        name, data, offset = entry
        if data is None:
            records.pop(name, None)
        else:
            records[name] = data
    return records, offset


def _entry_at(
    blob: bytes, offset: int, run_id: str, path: str
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
        raise _damaged(run_id, blob, offset, path, "damaged entry header")
    start = offset + _HEAD
    end = start + name_len + (0 if size == _GONE else size)
    if end > len(blob):
        return None
    if zlib.crc32(blob[start:end]) != body_crc:
        raise _damaged(run_id, blob, offset, path, "entry checksum mismatch")
    data = None if size == _GONE else blob[start + name_len : end]
    return blob[start : start + name_len].decode(), data, end


class RunLog:
    """Appends to one run's log; keeps the index so create-only is O(1)."""

    def __init__(self, path: str, run_id: str) -> None:
        self.path = path
        self.run_id = run_id
        self.records: dict[str, bytes] | None = None
        self.on_disk = False  # whether the file exists (its creation needs a folder fsync)

    def load(self) -> dict[str, bytes]:
        try:
            with open(self.path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            self.records, self.on_disk = {}, False
            return {}
        self.on_disk = True
        records, intact = parse(blob, self.run_id, self.path)
        if intact < len(blob):
            self._truncate(intact)
        self.records = records
        return dict(records)

    def index(self) -> dict[str, bytes]:
        if self.records is None:
            self.load()
        assert self.records is not None
        return self.records

    def append(self, items: list[tuple[str, bytes | None]]) -> None:
        index = self.index()
        frame = b"".join(encode_entry(name, data) for name, data in items)
        fresh = not self.on_disk
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_all(fd, frame)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        if fresh:
            fsync_dir(os.path.dirname(self.path))
            self.on_disk = True
        for name, data in items:
            if data is None:
                index.pop(name, None)
            else:
                index[name] = data

    def _truncate(self, length: int) -> None:
        with open(self.path, "r+b") as f:
            f.truncate(length)
            os.fsync(f.fileno())


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
