"""A floor for the engine itself: the least a Python library does per step
to give durable's guarantees on a local log, written as one function with
nothing else (no retries, events, scopes, artifacts, cache, async, error
messages). `overhead.py` prints it beside durable, measured in the same run.

Per recorded step, as durable does it: the run from a context variable, the
next position, a SHA-256 digest of the arguments, a look for a record at the
position, a `stat` of the lease file before the body (a lost lease runs
nothing) and another before the write (nor writes anything), the record
(the same 15-field msgpack row) sealed with a CRC, then framed with two more,
appended under an exclusive `flock` after an `fstat` (create-only against
other writers), and an `fdatasync` under "fsync". Per replayed step: the log
read once and its entries checked, then the run, the position, the digest,
the record's CRC, its row decoded, name, fingerprint and digest compared,
and the value decoded.

What it leaves out is what durable's users asked for; what it keeps is
what no version of durable can leave out and stay as safe."""

from __future__ import annotations

import contextvars
import fcntl
import hashlib
import os
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import msgpack

_ENTRY = struct.Struct(">2sHIII")
_FIELDS = struct.Struct(">2sHII")
_CRC = struct.Struct(">I")
_FP = "f" * 32
_run: contextvars.ContextVar[_Run] = contextvars.ContextVar("run")


class _Run:
    def __init__(self, folder: Path, sync: bool) -> None:
        self.lease = str(folder / "lease")
        self.log = os.open(folder / "records.log", os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.sync = sync
        self.next = 0
        self.size = 0
        self.records: dict[int, bytes] = {}
        self.packer = msgpack.Packer(use_bin_type=True)


def _digest(i: int) -> str:
    h = hashlib.sha256(b"A1:")
    h.update(b"i")
    h.update(b"i%d;" % i)
    return h.hexdigest()[:32]


def _seal(body: bytes) -> bytes:
    return b"DRB2\x02" + _CRC.pack(zlib.crc32(body)) + body


def _entry(name: bytes, data: bytes) -> bytes:
    fields = _FIELDS.pack(b"\xd7\x1e", len(name), len(data), zlib.crc32(data, zlib.crc32(name)))
    return b"".join((fields, _CRC.pack(zlib.crc32(fields)), name, data))


def record(fn: Callable[[int], int], i: int) -> int:
    run = _run.get()
    pos = run.next
    run.next += 1
    digest = _digest(i)
    if pos in run.records:
        raise AssertionError("a recorded run is not replayed here")
    os.stat(run.lease)
    value = fn(i)
    started = time.time()
    row = [1, pos, "step", "trivial", _FP, digest, "msgpack", run.packer.pack(value), None,
           True, started, time.time(), [], [], {}]  # fmt: skip
    sealed = _seal(run.packer.pack(row))
    os.stat(run.lease)
    fcntl.flock(run.log, fcntl.LOCK_EX)
    try:
        if os.fstat(run.log).st_size != run.size:
            raise AssertionError("another writer: a catch-up is not sketched here")
        frame = _entry(b"steps/%08d" % pos, sealed)
        os.write(run.log, frame)
        run.size += len(frame)
    finally:
        fcntl.flock(run.log, fcntl.LOCK_UN)
    if run.sync:
        os.fdatasync(run.log)
    run.records[pos] = sealed
    return value


def replay(fn: Callable[[int], int], i: int) -> int:
    run = _run.get()
    pos = run.next
    run.next += 1
    digest = _digest(i)
    sealed = run.records[pos]
    body = sealed[9:]
    if _CRC.unpack_from(sealed, 5)[0] != zlib.crc32(body):
        raise AssertionError("damaged")
    row = msgpack.unpackb(body)
    if row[3] != "trivial" or row[4] != _FP or row[5] != digest:
        raise AssertionError("a changed call")
    value: int = msgpack.unpackb(row[7])
    return value


def _read_log(run: _Run) -> None:
    """Every entry, checked, into `run.records` (as a resume reads a log)."""
    blob = os.pread(run.log, os.fstat(run.log).st_size, 0)
    offset = 0
    while offset < len(blob):
        _, name_len, size, body_crc, head_crc = _ENTRY.unpack_from(blob, offset)
        if head_crc != zlib.crc32(blob[offset : offset + _FIELDS.size]):
            raise AssertionError("damaged header")
        start = offset + _ENTRY.size
        name, data = (
            blob[start : start + name_len],
            blob[start + name_len : start + name_len + size],
        )
        if zlib.crc32(data, zlib.crc32(name)) != body_crc:
            raise AssertionError("damaged entry")
        run.records[int(name[6:])] = data
        offset = start + name_len + size


def _trivial(i: int) -> int:
    return i * 2 + 1


def measure(n: int, folder: Path, sync: bool) -> dict[str, float]:
    """Seconds per step: record wall and CPU, replay wall (reading the log
    included), for n trivial steps."""
    folder.mkdir(parents=True)
    (folder / "lease").touch()
    run = _Run(folder, sync)
    token = _run.set(run)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        total = sum(record(_trivial, i) for i in range(n))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        run.next, run.records = 0, {}
        again = time.perf_counter()
        _read_log(run)
        if sum(replay(_trivial, i) for i in range(n)) != total:
            raise AssertionError("the replay gave other values")
        again = time.perf_counter() - again
    finally:
        _run.reset(token)
        os.close(run.log)
    return {"record wall": wall / n, "record cpu": cpu / n, "replay": again / n}
