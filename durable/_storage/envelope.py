"""The sealed envelope every stored record, manifest and blob travels in:
magic, flag, checksum (CRC32 or SHA-256) and, with a signing key, an
HMAC-SHA256 of the body. Checked before anything is decoded, so damage
(CorruptRecordError) is told apart from forgery (IntegrityError) and a
planted pickle is never loaded."""

from __future__ import annotations

import hashlib
import hmac
import struct
import zlib

from ..errors import CorruptRecordError, IntegrityError
from .crc import LARGE, crc32
from .keys import Position

_MAGIC = b"DRB2"  # DRB1's checksum left the flag byte out
_PLAIN, _SIGNED, _CRC = b"\x00", b"\x01", b"\x02"
_SUM = 32  # sha256
_HEAD = len(_MAGIC) + 1 + _SUM
_SIGNED_HEAD = _HEAD + 32  # + HMAC-SHA256
_CRC_HEAD = len(_MAGIC) + 1 + 4
_CRC32 = struct.Struct(">I")
_CRC_SEED = zlib.crc32(_CRC)  # the flag is summed too: a flipped flag is damage
_CRC_START = _MAGIC + _CRC  # how a CRC envelope starts (one comparison, no slice)

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
    # zlib inline for a record of a hundred bytes, ISA-L for a large value.
    crc = zlib.crc32(body, _CRC_SEED) if len(body) < LARGE else crc32(body, _CRC_SEED)
    return b"".join((_MAGIC, _CRC, _CRC32.pack(crc), body))


CRC_START = _CRC_START  # for `logentry`, which frames large CRC envelopes


def crc_intact(blob: bytes, start: int, end: int) -> int | None:
    """The CRC of the CRC envelope at blob[start:end] (`seal_record`) when its
    body sums to the CRC it carries, else None: a local log's entry of such
    an envelope is checked so on read (`logentry.locate`), its own checksum
    continuing from this one instead of summing the body a second time."""
    if end - start < _CRC_HEAD or not blob.startswith(_CRC_START, start):
        return None
    body = memoryview(blob)[start + _CRC_HEAD : end]
    crc = zlib.crc32(body, _CRC_SEED) if len(body) < LARGE else crc32(body, _CRC_SEED)
    return crc if _CRC32.unpack_from(blob, start + 5)[0] == crc else None


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


# Written by a process that had a key: "someone without the key wrote it"
# (the advice for a bad signature) would send the reader the wrong way.
_NO_KEY = (
    "Its writer had a signing key and this process has none: set DURABLE_SIGNING_KEY "
    "(or open_store(..., signing_key=...)) to the key the writers use."
)


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
            why = "is signed but this store has no signing key"
            raise IntegrityError(name, why, run_id=run_id, position=position, advice=_NO_KEY)
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
    if key is not None or not data.startswith(_CRC_START) or len(data) < _CRC_HEAD:
        return None
    body = data[_CRC_HEAD:]
    crc = zlib.crc32(body, _CRC_SEED) if len(body) < LARGE else crc32(body, _CRC_SEED)
    return body if _CRC32.unpack_from(data, 5)[0] == crc else None


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
