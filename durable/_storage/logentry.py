"""The framing of a run log's entries (`log.RunLog` writes and reads them).

Entry: magic(2) | name length(2) | data length(4) | data crc32(4) | header
crc32(4) | name | data, with data length 0xFFFFFFFF marking a deletion. The
header's crc covers the fields before it, so the lengths are trusted. The
data's: with magic d7 1e, the crc32 of name and data; with magic d7 1f (since
perf50), data is a CRC envelope (`envelope.seal_record`: an unsigned record)
of `LARGE` bytes or more, and the entry's is the crc32 of the name continued
from the CRC the envelope carries, which is checked against its body on
read: a large output is summed once on its way to the log, not twice (a
record of a hundred bytes is summed again: zlib does that for less than the
test for an envelope costs). A last entry cut short (the process died
mid-write) is ignored and cut off by the next writer; a complete entry whose
checksum fails is damage, and raises rather than being dropped, except where
a power loss may have left it (`locate`'s `unsynced`)."""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable
from typing import TypeVar

from .._errortext import warn
from ..errors import CorruptRecordError
from .crc import LARGE, crc32
from .envelope import CRC_START, crc_intact
from .keys import Position, position_of
from .logcut import ADVICE
from .logcut import shrunk as shrunk  # log.py imports it from here (it is at the 330-line limit)

_MAGIC = b"\xd7\x1e"
_ENVELOPED = b"\xd7\x1f"  # data is a CRC envelope, summed once (see above)
_CARRIED = struct.Struct(">I")  # the CRC a CRC envelope carries, at byte 5
_MAGICS = (_MAGIC, _ENVELOPED)
_FIELDS = struct.Struct(">2sHII")  # magic, name length, data length, body crc
_CRC = struct.Struct(">I")  # crc of the fields above, so lengths are trusted
_HEAD = _FIELDS.size + _CRC.size
# Both at once, as `locate` reads them, the magic as an int (no bytes made an entry).
_ENTRY_HEAD = struct.Struct(">HHIII")
_PLAIN_N, _ENVELOPED_N = int.from_bytes(_MAGIC, "big"), int.from_bytes(_ENVELOPED, "big")
_SUMMED = _FIELDS.size  # the bytes the header crc covers
_GONE = 0xFFFFFFFF
_STEPS = b"steps/"  # a body step's record name: these, then eight ASCII digits
_STEP_NAME = len(_STEPS) + 8
K = TypeVar("K")
def _damaged(
    run_id: str, blob: bytes, offset: int, base: int, path: str, why: str
) -> CorruptRecordError:
    """Name the run, the position (when the entry's name is still legible)
    and the byte offset in the log file, with advice that works: a log is not
    repaired in place, so the way on is to start the run again."""
    return CorruptRecordError(
        run_id,
        _position(blob, offset),
        f"{path}, entry at byte {base + offset}",
        why,
        advice=ADVICE,
    )


def _position(blob: bytes, offset: int) -> Position | None:
    """The position of the entry at offset, when its name is still legible."""
    _, name_len, _, _ = _FIELDS.unpack_from(blob, offset)
    try:
        return position_of(blob[offset + _HEAD : offset + _HEAD + name_len].decode())
    except UnicodeDecodeError:
        return None


def _dropped(run_id: str, blob: bytes, offset: int, base: int, path: str) -> None:
    """Damage a power loss may have left (`locate`): said, then read as the log's end."""
    position = _position(blob, offset)
    at = f" (position {position})" if position is not None else ""
    warn(
        f"run {run_id!r}: its log {path} was damaged past what was synced, from byte "
        f"{base + offset}{at} on, as a power loss may leave it under durability \"batch\" "
        f"or \"none\": the {len(blob) - offset} bytes from there on are left out (a resume "
        "cuts them off), and the steps they recorded run again (docs/storage.md, "
        "durability levels)"
    )


def step_number(raw: bytes, start: int = 0, end: int = -1) -> int:
    """The body position whose record name (`keys.record_name`: "steps/"
    and eight ASCII digits) is raw[start:end] (end -1: its end), else -1:
    THE test, for a name read from a log and for one asked by a writer."""
    end = len(raw) if end < 0 else end
    if end - start == _STEP_NAME and raw.startswith(_STEPS, start):
        digits = raw[start + 6 : end]
        if digits.isdigit():  # bytes: ASCII digits only (int() takes others, and "+", "_")
            return int(digits)
    return -1


def first_entry(head: bytes) -> int | None:
    """What names the entry a log starts with (its header's checksum, which
    covers its name's and data's lengths and its data's checksum), when
    `head`, the log's first `HEAD` bytes, is an intact header; else None."""
    if len(head) < _HEAD or head[:2] not in _MAGICS:
        return None
    (crc,) = _CRC.unpack_from(head, _SUMMED)
    return crc if zlib.crc32(head[:_SUMMED]) == crc else None


HEAD = _HEAD


def data_offset(name: str) -> int:
    """Where an entry's data starts, from the entry's start."""
    return _HEAD + len(name.encode())


def encode_entry(name: str, data: bytes | None) -> bytes:
    # The checksum runs on over name and data, so data is copied once, into
    # the entry (a large output is not copied again to be summed).
    if data is not None:
        framed = frame_entry(name, data)
        return framed if isinstance(framed, bytes) else b"".join(framed)
    raw = name.encode()
    fields = _FIELDS.pack(_MAGIC, len(raw), _GONE, zlib.crc32(raw))
    return b"".join((fields, _CRC.pack(zlib.crc32(fields)), raw))


def frame_entry(name: str, data: bytes) -> bytes | tuple[bytes, bytes]:
    """The entry of a record as `logfile.write_all` takes it: whole, or,
    for data of `LARGE` bytes or more, its head (fields, their CRC, the
    name) and data apart, which one writev puts in the file together: a
    large output is not copied into an entry on its way there."""
    raw = name.encode()
    size, magic = len(data), _MAGIC
    if size < LARGE:  # a record of a hundred bytes: zlib sums it for less than not summing it costs
        fields = _FIELDS.pack(magic, len(raw), size, zlib.crc32(data, zlib.crc32(raw)))
        return b"".join((fields, _CRC.pack(zlib.crc32(fields)), raw, data))
    if data.startswith(CRC_START):  # a large CRC envelope: its CRC, the body not summed again
        magic, crc = _ENVELOPED, zlib.crc32(raw, _CARRIED.unpack_from(data, 5)[0])
    else:
        crc = crc32(data, zlib.crc32(raw))
    fields = _FIELDS.pack(magic, len(raw), size, crc)
    return b"".join((fields, _CRC.pack(zlib.crc32(fields)), raw)), data


def parse(
    blob: bytes,
    run_id: str,
    records: dict[str, bytes] | None = None,
    base: int = 0,
    path: str = "records.log",
    unsynced: int | None = None,
) -> tuple[dict[str, bytes], int]:
    """Apply the entries of blob (the log from byte `base` on) to records;
    return them and the length of the intact prefix of blob. `path` (the log
    file) only serves the message of a damaged entry; `unsynced`: `locate`."""
    records = {} if records is None else records
    spans: dict[str, int] = {}
    intact = locate(blob, run_id, spans, base, path, unsynced=unsynced, gone=records)
    for name, at in spans.items():
        records[name] = data_at(blob, at, base)
    return records, intact


def locate(
    blob: bytes,
    run_id: str,
    spans: dict[str, int],
    base: int = 0,
    path: str = "records.log",
    steps: dict[int, int] | None = None,
    unsynced: int | None = None,
    gone: dict[str, bytes] | None = None,
) -> int:
    """`parse`, keeping where each record's data lies in the file (`span`)
    instead of a copy of it; return the length of the intact prefix. The
    entries are read here, in one loop (a resume reads every entry of its
    log), and each is checked as `logentry` says: a torn tail ends the
    loop, damage raises. `steps` (a whole log read for a resume): THE
    record name of a body position (`keys.record_name`: "steps/" and eight
    ASCII digits) is kept there by position instead, its name never spelled
    as a str and parsed back (`logindex`); every other name in `spans`.
    Damage at or past byte `unsynced` of the log (a power loss's,
    `noted.unsynced`) ends it there, as a torn tail does, with a
    warning: the steps from there on run again."""
    offset, end, view = 0, len(blob), memoryview(blob)
    head, crc = _ENTRY_HEAD.unpack_from, zlib.crc32
    by_position = steps is not None
    while end - offset >= _HEAD:
        magic, name_len, size, body_crc, head_crc = head(blob, offset)
        start = offset + _HEAD
        if (magic != _PLAIN_N and magic != _ENVELOPED_N) or head_crc != crc(
            view[offset : offset + _SUMMED]
        ):
            if blob.count(b"\0", offset) == end - offset:
                break  # a zero-filled tail after a power loss
            if unsynced is not None and base + offset >= unsynced:
                _dropped(run_id, blob, offset, base, path)
                break
            raise _damaged(run_id, blob, offset, base, path, "damaged entry header")
        data = start + name_len
        after = data + (0 if size == _GONE else size)
        if after > end:
            break  # torn: the writer died mid-append
        if (
            crc(view[start:after]) != body_crc
            if magic == _PLAIN_N
            else size == _GONE
            or (carried := crc_intact(blob, data, after)) is None
            or crc(view[start:data], carried) != body_crc
        ):
            if unsynced is not None and base + offset >= unsynced:
                _dropped(run_id, blob, offset, base, path)
                break
            raise _damaged(run_id, blob, offset, base, path, "entry checksum mismatch")
        # `step_number`, inline: a resume asks it of every entry of its log.
        if (
            by_position
            and name_len == _STEP_NAME
            and blob.startswith(_STEPS, start)
            and (digits := blob[start + 6 : data]).isdigit()
        ):
            assert steps is not None
            n = int(digits)
            if size == _GONE:
                steps.pop(n, None)
            else:
                steps[n] = (base + data) << 32 | size
            offset = after
            continue
        name = blob[start:data].decode()
        if size == _GONE:
            spans.pop(name, None)
            if gone is not None:
                gone.pop(name, None)
        else:
            spans[name] = (base + data) << 32 | size  # `span`
        offset = after
    return offset


def span(start: int, size: int) -> int:
    """Where data lies in the log, as one int (start, size): a run keeps one
    per record, so it is kept small."""
    return start << 32 | size


def data_at(blob: bytes, at: int, base: int = 0) -> bytes:
    """The data at span `at` of a blob holding the log from byte `base` on."""
    start = (at >> 32) - base
    return blob[start : start + (at & 0xFFFFFFFF)]


def data_of(blob: bytes, spans: Iterable[tuple[K, int]]) -> dict[K, bytes]:
    """`data_at` of each (key, span) whose span is not 0, in one loop
    without a call a record (a resume reads every record of its log)."""
    return {k: blob[at >> 32 : (at >> 32) + (at & 0xFFFFFFFF)] for k, at in spans if at}


def read_at(fd: int, start: int, end: int) -> bytes:
    """The bytes of the file at fd from start to end (fewer at its end)."""
    parts = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        parts.append(chunk)
        start += len(chunk)
    return b"".join(parts)
