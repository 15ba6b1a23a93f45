"""The on-disk schema: a sealed envelope (checksum or HMAC) around a msgpack
map with a format version. Runs have a manifest; operations have records."""

from __future__ import annotations

import hashlib
import hmac
import struct
import time
import zlib
from dataclasses import asdict, dataclass, field, fields
from sys import intern
from typing import TYPE_CHECKING, Any

from ..errors import CorruptRecordError, IntegrityError, SerializationError
from .codec import MSGPACK, decode_value, encode_value, pack, unpack
from .keys import Position, as_position, blob_name

if TYPE_CHECKING:
    from .base import Store

FORMAT = 1
_MAGIC = b"DRB2"  # DRB1's checksum left the flag byte out
_PLAIN, _SIGNED, _CRC = b"\x00", b"\x01", b"\x02"
_SUM = 32  # sha256
_HEAD = len(_MAGIC) + 1 + _SUM
_SIGNED_HEAD = _HEAD + 32  # + HMAC-SHA256
_CRC_HEAD = len(_MAGIC) + 1 + 4
_CRC32 = struct.Struct(">I")
_CRC_SEED = zlib.crc32(_CRC)  # the flag is summed too: a flipped flag is damage

# The envelope: magic, flag, sha256(flag + rest), rest; rest is the body, or
# HMAC-SHA256(key, body) + body when signed. The checksum covers every byte
# but the magic (compared as it is), the flag included, so it tells damage (a
# truncated or bit-flipped object, anywhere: CorruptRecordError) apart from
# forgery (an object that checks out but was not signed with our key:
# IntegrityError). Both are decided before the body is decoded, so a planted
# pickle is never loaded.


def seal_record(body: bytes, key: bytes | None) -> bytes:
    """An operation record's envelope. Unsigned, a CRC32 tells damage: no
    content address or manifest binds to its sum, so SHA-256 buys nothing
    (the `_CRC` flag is the envelope's version; older records keep theirs)."""
    if key is not None:
        return seal(body, key)
    return b"".join((_MAGIC, _CRC, _CRC32.pack(zlib.crc32(body, _CRC_SEED)), body))


def seal(body: bytes, key: bytes | None) -> bytes:
    if key is None:
        return _MAGIC + _PLAIN + _sum(_PLAIN, body) + body
    rest = hmac.new(key, body, hashlib.sha256).digest() + body
    return _MAGIC + _SIGNED + _sum(_SIGNED, rest) + rest


def _sum(flag: bytes, rest: bytes | memoryview) -> bytes:
    # Fed in two parts: a 100 MB value is hashed without being copied.
    h = hashlib.sha256(flag)
    h.update(rest)
    return h.digest()


def unseal(
    data: bytes, key: bytes | None, *, run_id: str, position: Position | None, name: str
) -> bytes:
    """The verified body of a sealed object, or CorruptRecordError /
    IntegrityError (naming run, position and key) without decoding it."""
    flag = data[4:5]
    if flag == _CRC:
        return _unseal_crc(data, key, run_id=run_id, position=position, name=name)
    head = _SIGNED_HEAD if flag == _SIGNED else _HEAD
    if len(data) < head or data[:4] != _MAGIC or flag not in (_PLAIN, _SIGNED):
        raise CorruptRecordError(run_id, position, name, "truncated or not a durable record")
    if data[5:_HEAD] != _sum(flag, memoryview(data)[_HEAD:]):
        raise CorruptRecordError(run_id, position, name, "checksum mismatch (damaged object)")
    body = data[head:]
    if key is None:
        if flag == _SIGNED:
            why = "is signed but this store has no signing key; set DURABLE_SIGNING_KEY"
            raise IntegrityError(name, why, run_id=run_id, position=position)
        return body
    if flag != _SIGNED:
        why = "is not signed but the store has a signing key"
        raise IntegrityError(name, why, run_id=run_id, position=position)
    if not hmac.compare_digest(data[_HEAD:head], hmac.new(key, body, hashlib.sha256).digest()):
        why = "signature does not match its content"
        raise IntegrityError(name, why, run_id=run_id, position=position)
    return body


def intact_body(data: bytes, key: bytes | None) -> bytes | None:
    """The body of an intact unsigned (CRC) envelope when the store has no
    signing key: the whole check of most records, with nothing named. None
    for anything else, which `unseal` then checks and names."""
    if key is not None or data[4:5] != _CRC or len(data) < _CRC_HEAD or data[:4] != _MAGIC:
        return None
    body = data[_CRC_HEAD:]
    return body if _CRC32.unpack_from(data, 5)[0] == zlib.crc32(body, _CRC_SEED) else None


def _unseal_crc(
    data: bytes, key: bytes | None, *, run_id: str, position: Position | None, name: str
) -> bytes:
    body = intact_body(data, None)
    if body is None and (len(data) < _CRC_HEAD or data[:4] != _MAGIC):
        raise CorruptRecordError(run_id, position, name, "truncated or not a durable record")
    if body is None:
        raise CorruptRecordError(run_id, position, name, "checksum mismatch (damaged object)")
    if key is not None:
        why = "is not signed but the store has a signing key"
        raise IntegrityError(name, why, run_id=run_id, position=position)
    return body


def sealed_body(data: bytes | memoryview) -> memoryview:
    """The body of a sealed object that is already known to be intact and
    ours: its bytes hash to the content address a verified (checked or
    signed) record names, which covers every byte, the envelope's own
    checksum and signature included. Nothing is hashed again or copied."""
    view = memoryview(data)
    flag = bytes(view[4:5])
    if bytes(view[:4]) != _MAGIC or flag not in (_PLAIN, _SIGNED):
        raise ValueError("not a sealed object")
    return view[_SIGNED_HEAD if flag == _SIGNED else _HEAD :]


def sealed_head(signed: bool) -> int:
    """Where the body of a sealed object starts (`seal`)."""
    return _SIGNED_HEAD if signed else _HEAD


def sealed_sum(data: bytes) -> bytes:
    """The checksum a sealed object carries (of everything after it)."""
    return data[len(_MAGIC) + 1 : _HEAD]


def check_blob(
    raw: bytes, digest: str, *, run_id: str, position: Position | None, name: str
) -> None:
    """A blob must hash to the digest its (verified) record names."""
    if hashlib.sha256(raw).hexdigest() != digest:
        why = f"blob {digest[:12]} does not match its digest (damaged or replaced)"
        raise CorruptRecordError(run_id, position, name, why)


def stored_bytes(
    store: Store,
    where: tuple[str, str],
    inline: bytes | None,
    blob: str | None,
    *,
    position: Position | None,
    name: str,
) -> bytes | None:
    """The encoded value a (verified) record or manifest refers to: inline,
    or its blob (`where` is workflow, run id), checked against the digest
    the record names and unsealed."""
    if blob is None:
        return inline
    workflow, run_id = where
    raw = store.get_blob(workflow, run_id, blob)
    if raw is None:
        raise CorruptRecordError(run_id, position, blob_name(blob), "blob missing")
    check_blob(raw, blob, run_id=run_id, position=position, name=name)
    return unseal(raw, store.signing_key, run_id=run_id, position=position, name=name)


def keep_encoded(
    store: Store, where: tuple[str, str], data: bytes
) -> tuple[bytes | None, str | None]:
    """(inline bytes, None), or (None, blob digest) for data over the
    store's blob threshold: stored once, sealed, under `blobs/<sha256>`."""
    if len(data) <= store.blob_threshold:
        return data, None
    return None, store.put_blob(*where, seal(data, store.signing_key))


def keep_plain(store: Store, where: tuple[str, str], record: StepRecord, packed: bytes) -> None:
    """Put a value `codec.pack_plain` already encoded into its record."""
    record.encoding = MSGPACK
    record.value, record.blob = keep_encoded(store, where, packed)


def encode_into(store: Store, where: tuple[str, str], record: StepRecord, value: Any) -> int:
    """Encode a step's value into its record (inline, or a blob under
    `where`) under the store's `allow_pickle`; the encoded size."""
    data = encode_record(store, record, value)
    record.value, record.blob = keep_encoded(store, where, data)
    return len(data)


def encode_record(
    store: Store, record: StepRecord, value: Any, *, out_of_band: bool = False
) -> bytes:
    """Set record's encoding; the encoded bytes (SerializationError naming
    the step when the value cannot be encoded under `allow_pickle`)."""
    try:
        record.encoding, data = encode_value(
            value, allow_pickle=store.allow_pickle, out_of_band=out_of_band
        )
    except Exception as e:
        raise SerializationError(
            record.name, type(value).__qualname__, f"{type(e).__name__}: {e}"
        ) from e
    return data


def decode_stored(store: Store, encoding: str, data: bytes | memoryview, *, name: str) -> Any:
    """THE place a value read from a store is decoded: step and item
    records, blobs, a manifest's arguments and result, fork sources and
    history previews all come here, so the store's `allow_pickle` (and
    `DURABLE_ALLOW_PICKLE`) holds for every reader. Signatures were checked
    when the record, manifest or blob holding `data` was unsealed."""
    if encoding == MSGPACK:  # plain data: no policy applies, the replay fast path
        return unpack(data)
    return decode_value(encoding, data, allow_pickle=store.allow_pickle, key=name)


def load_stored(
    store: Store,
    where: tuple[str, str],
    encoding: str,
    inline: bytes | None,
    blob: str | None,
    *,
    position: Position | None,
    name: str,
) -> Any:
    """`stored_bytes`, then `decode_stored`."""
    data = stored_bytes(store, where, inline, blob, position=position, name=name)
    if data is None:
        raise CorruptRecordError(where[1], position, name, "it holds no value")
    return decode_stored(store, encoding, data, name=name)


@dataclass
class Attempt:
    type: str
    message: str
    traceback: str
    at: float


@dataclass(slots=True)  # a replay keeps one per position: no __dict__ each
class StepRecord:
    position: Position
    kind: str  # "step" | "loop" | "sleep"
    name: str
    fingerprint: str
    args_digest: str | None
    encoding: str | None = None  # None: no value kept (persist=False, redacted)
    value: bytes | None = None
    blob: str | None = None
    persisted: bool = True
    started: float = 0.0
    ended: float = 0.0
    attempts: list[Attempt] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    # A positional array, not a map: records are read on every replay, and
    # an array of ~15 fields decodes in about half the time.
    def to_bytes(self) -> bytes:
        # Spelled out in `fields` order (a test holds them together): this
        # runs once per step, and a getattr loop costs more than the packing.
        return pack([
            FORMAT, self.position, self.kind, self.name, self.fingerprint, self.args_digest,
            self.encoding, self.value, self.blob, self.persisted, self.started, self.ended,
            [asdict(a) for a in self.attempts] if self.attempts else [],
            self.artifacts, self.extra,
        ])  # fmt: skip

    @classmethod
    def from_bytes(cls, body: bytes) -> StepRecord:
        row = unpack(body)
        if not isinstance(row, list) or not row or row[0] != FORMAT:
            raise ValueError("unknown record format")
        rec = cls(*row[1:])
        # Every record of a step repeats these: one copy of each in memory.
        rec.kind, rec.name, rec.fingerprint = intern(rec.kind), intern(rec.name), intern(rec.fingerprint)
        read: Any = rec.position
        if type(read) is not int or read < 0:  # else a body position, as it is
            position = as_position(read)
            if position is None:
                raise ValueError(f"not a position: {read!r}")
            rec.position = position
        if rec.attempts or type(rec.attempts) is not list:  # not a list: undecodable
            rec.attempts = [Attempt(**a) for a in rec.attempts]  # type: ignore[arg-type]
        return rec


STEP_FIELDS = [f.name for f in fields(StepRecord)]


@dataclass
class RunRecord:
    workflow: str
    run_id: str
    fingerprint: str
    steps: dict[str, str]
    step_parts: dict[str, dict[str, str]]
    args_encoding: str
    args: bytes
    status: str = "running"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    result_encoding: str | None = None
    result: bytes | None = None
    error: dict[str, str] | None = None
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Arguments or a result over the store's blob threshold live in a blob
    # (`args`/`result` then empty), so the manifest stays small.
    args_blob: str | None = None
    result_blob: str | None = None
    # [kind, name] of each top-level position of the last attempt that
    # completed (None: a position with no record of its own), so that the
    # steps still to come can be shown while a later attempt runs.
    plan: list[Any] | None = None
    # (The stored form, summary and payload, is in `manifest`.)

    def steps_total(self, position: int | None = None) -> int | None:
        """THE known total of a run: the top-level positions of its last
        completed attempt (or its fork source's), unless an attempt at
        `position` already went past it (the body changed since)."""
        total = self.extra.get("steps_total")
        if not isinstance(total, int) or (position is not None and position > total):
            return None
        return total
