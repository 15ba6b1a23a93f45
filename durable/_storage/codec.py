"""Values to bytes and back. msgpack for data that round-trips exactly,
cloudpickle (tagged) for everything else. The only module that imports
msgpack and cloudpickle."""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any

import cloudpickle
import msgpack

from ..errors import IntegrityError

MSGPACK = "m"
PICKLE = "p"
# A pickle whose large buffers (numpy arrays...) follow it, each aligned,
# so that a reader holding the bytes in writable memory of its own gets
# the arrays without a copy (the step cache's blobs).
PICKLE_OOB = "P"
_OOB_HEAD = struct.Struct(">QI")  # length of the pickle, number of buffers
_OOB_BUF = struct.Struct(">QQ")  # offset (from the start) and length of each
_ALIGN = 64


def pack_plain(value: Any) -> bytes | None:
    """The msgpack bytes of value when msgpack gives back exactly this
    value, with the same types; else None. ValueError when msgpack cannot
    hold it (nested too deep, a bytes or str over 4 GiB). One pass in C (a Packer per
    call: one shared by threads would mix their bytes): `strict_types`
    sends anything that is not exactly str, bytes, int (64-bit), float,
    bool, None, list or dict (tuples, subclasses, sets...) to `_not_plain`.
    Dict keys are plain scalars (they come back as they went in).

    "Plain data" is asked three questions in durable, and each has its own
    answer, written once: here, what is stored without pickle (no tuples:
    msgpack returns lists); `_core.identity`, which values have a canonical
    digest (tuples, sets, complex, bytearray too, type-tagged); and
    `_fingerprint.values.plain_tokens`, which values count by value in a
    fingerprint (stable text tokens, Ellipsis for AST literals). Merging them
    would change recorded digests and fingerprints, so they stay apart."""
    try:
        return msgpack.packb(  # type: ignore[no-any-return]
            value, use_bin_type=True, strict_types=True, default=_not_plain
        )
    except (_NotPlain, UnicodeEncodeError, OverflowError):
        # UnicodeEncodeError: a str with lone surrogates (os.fsdecode of a
        # bad name), which pickle keeps.
        return None
    except ValueError as e:  # msgpack's own limits: too deep, or too large
        if "recursion" in str(e):
            raise ValueError(_TOO_DEEP) from None
        raise


class _NotPlain(Exception):
    pass


def _not_plain(value: Any) -> Any:
    raise _NotPlain


def is_plain(value: Any) -> bool:
    """Whether value is stored without pickle (`pack_plain`)."""
    return pack_plain(value) is not None


def encode_value(
    value: Any, *, allow_pickle: bool = True, out_of_band: bool = False
) -> tuple[str, bytes]:
    """Return (encoding tag, bytes). Raises whatever the pickler raises.
    `out_of_band`: a pickled value's buffers go after the pickle (`PICKLE_OOB`)."""
    try:
        packed = pack_plain(value)
        if packed is not None:
            return MSGPACK, packed
        if out_of_band:
            return _pickle_out_of_band(value, allow_pickle)
        return pickle_value(value, allow_pickle)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


_TOO_DEEP = "it is nested deeper than Python's recursion limit"


def pickle_value(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    """(PICKLE, bytes) for a value `pack_plain` refused."""
    _check_pickle(allow_pickle)
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=5).dump(value)
    return PICKLE, buffer.getvalue()


def _check_pickle(allow_pickle: bool) -> None:
    if not allow_pickle:
        raise TypeError(
            "it is not plain data (str, int, float, bool, None, bytes, and lists and "
            "dicts of those, with scalar keys) and the store has allow_pickle=False"
        )


def _pickle_out_of_band(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    _check_pickle(allow_pickle)
    raws: list[memoryview] = []

    def keep(buffer: pickle.PickleBuffer) -> bool:
        try:
            raws.append(buffer.raw())
        except BufferError:  # not contiguous: it stays in the pickle
            return True
        return False

    stream = io.BytesIO()
    _Pickler(stream, protocol=5, buffer_callback=keep).dump(value)
    if not raws:
        return PICKLE, stream.getvalue()
    pickled = stream.getvalue()
    end = _OOB_HEAD.size + _OOB_BUF.size * len(raws) + len(pickled)
    table: list[bytes | memoryview] = [_OOB_HEAD.pack(len(pickled), len(raws))]
    parts: list[bytes | memoryview] = [pickled]
    for raw in raws:
        start = -(-end // _ALIGN) * _ALIGN
        table.append(_OOB_BUF.pack(start, raw.nbytes))
        parts += [bytes(start - end), raw]
        end = start + raw.nbytes
    return PICKLE_OOB, b"".join(table + parts)


def _loads_out_of_band(data: bytes | memoryview) -> Any:
    """A `PICKLE_OOB` value. Its buffers are used where they lie when the
    data is writable memory (the caller's own, e.g. a fresh read), else
    copied: either way the arrays returned are writable and the caller's."""
    view = memoryview(data)
    length, count = _OOB_HEAD.unpack_from(view, 0)
    start = _OOB_HEAD.size + _OOB_BUF.size * count
    buffers: list[Any] = []
    for i in range(count):
        offset, size = _OOB_BUF.unpack_from(view, _OOB_HEAD.size + _OOB_BUF.size * i)
        if offset < start + length or offset + size > len(view):
            raise ValueError("a pickled buffer lies outside the value")
        part = view[offset : offset + size]
        buffers.append(bytearray(part) if view.readonly else part)
    return cloudpickle.loads(view[start : start + length], buffers=buffers)


_IN_MEMORY = (io.StringIO, io.BytesIO)


class _Pickler(cloudpickle.CloudPickler):  # type: ignore[misc]
    """cloudpickle, except for open files: it would record their content and
    replay an `io.StringIO` in their place, which is not the value the step
    returned (a handle on a file)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase) and not isinstance(obj, _IN_MEMORY):
            raise TypeError(
                f"it holds an open file or stream ({type(obj).__name__}"
                f"{_named(obj)}), which cannot be replayed: return its path or its content"
            )
        return super().reducer_override(obj)


def _named(obj: Any) -> str:
    name = getattr(obj, "name", None)
    return f" {name!r}" if isinstance(name, str) else ""


def decode_value(
    tag: str, data: bytes | memoryview, *, allow_pickle: bool = True, key: str = ""
) -> Any:
    if tag == MSGPACK:
        return unpack(data)
    if tag in (PICKLE, PICKLE_OOB):
        if not allow_pickle:
            raise IntegrityError(key, "holds a pickled value and the store has allow_pickle=False")
        return cloudpickle.loads(data) if tag == PICKLE else _loads_out_of_band(data)
    raise ValueError(f"unknown value encoding {tag!r}")


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)  # type: ignore[no-any-return]


def unpack(data: bytes | memoryview) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def dumps_callable(obj: Any) -> bytes:
    """Pickle code for workers (loop_over executors)."""
    return cloudpickle.dumps(obj)  # type: ignore[no-any-return]


def loads_callable(data: bytes) -> Any:
    """The counterpart of dumps_callable, for what travels between the
    workflow process and its own workers (never for what a store holds)."""
    return cloudpickle.loads(data)
