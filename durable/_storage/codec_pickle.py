"""The pickled side of `codec`: cloudpickle, for values msgpack cannot
hold exactly and for code sent to `loop_over` workers. The only module that
imports cloudpickle, and `codec` loads it on first use: a run whose values
are all plain never pays for it."""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any

import cloudpickle

_IN_MEMORY = (io.StringIO, io.BytesIO)
_OOB_HEAD = struct.Struct(">QI")  # length of the pickle, number of buffers
_OOB_BUF = struct.Struct(">QQ")  # offset (from the start) and length of each
_ALIGN = 64


def dumps(value: Any) -> bytes:
    """A stored value's bytes (protocol 5), open files refused."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()


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


def dumps_out_of_band(value: Any) -> tuple[bytes, bool]:
    """(bytes, whether buffers follow the pickle): the pickle, then each
    contiguous buffer (a numpy array's data...) aligned to 64 bytes, so a
    reader holding the bytes in writable memory of its own uses them in
    place (`loads_out_of_band`)."""
    raws: list[memoryview] = []

    def keep(buffer: pickle.PickleBuffer) -> bool:
        try:
            raws.append(buffer.raw())
        except BufferError:  # not contiguous: it stays in the pickle
            return True
        return False

    stream = io.BytesIO()
    _Pickler(stream, protocol=5, buffer_callback=keep).dump(value)
    pickled = stream.getvalue()
    if not raws:
        return pickled, False
    end = _OOB_HEAD.size + _OOB_BUF.size * len(raws) + len(pickled)
    table: list[bytes | memoryview] = [_OOB_HEAD.pack(len(pickled), len(raws))]
    parts: list[bytes | memoryview] = [pickled]
    for raw in raws:
        start = -(-end // _ALIGN) * _ALIGN
        table.append(_OOB_BUF.pack(start, raw.nbytes))
        parts += [bytes(start - end), raw]
        end = start + raw.nbytes
    return b"".join(table + parts), True


def loads_out_of_band(data: bytes | memoryview) -> Any:
    """A value `dumps_out_of_band` wrote with buffers. They are used where
    they lie when the data is writable memory (the caller's own, e.g. a
    fresh read), else copied: either way the arrays returned are writable
    and the caller's."""
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


def loads(data: bytes | memoryview) -> Any:
    return cloudpickle.loads(data)


def dumps_callable(obj: Any) -> bytes:
    return cloudpickle.dumps(obj)  # type: ignore[no-any-return]
