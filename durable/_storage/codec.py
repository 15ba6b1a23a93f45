"""Values to bytes and back. msgpack for data that round-trips exactly,
cloudpickle (tagged) for everything else. The only module that imports
msgpack and cloudpickle."""

from __future__ import annotations

import io
from typing import Any

import cloudpickle
import msgpack

from ..errors import IntegrityError

MSGPACK = "m"
PICKLE = "p"
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def is_plain(value: Any) -> bool:
    """True when msgpack gives back exactly this value, with the same types.

    "Plain data" is asked three questions in durable, and each has its own
    answer, written once: here, what is stored without pickle (no tuples:
    msgpack returns lists); `_core.identity`, which values have a canonical
    digest (tuples, sets, complex, bytearray too, type-tagged); and
    `_fingerprint.values.plain_tokens`, which values count by value in a
    fingerprint (stable text tokens, Ellipsis for AST literals). Merging them
    would change recorded digests and fingerprints, so they stay apart."""
    t = type(value)
    if t is str or t is bool or t is float or value is None or t is bytes:
        return True
    if t is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if t is list:
        return all(is_plain(v) for v in value)
    if t is dict:
        return all(type(k) is str and is_plain(v) for k, v in value.items())
    return False


def encode_value(value: Any, *, allow_pickle: bool = True) -> tuple[str, bytes]:
    """Return (encoding tag, bytes). Raises whatever the pickler raises."""
    try:
        return _encode(value, allow_pickle)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


_TOO_DEEP = "it is nested deeper than Python's recursion limit"


def _encode(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    if is_plain(value):
        try:
            return MSGPACK, pack(value)
        except UnicodeEncodeError:
            pass  # a str with lone surrogates (os.fsdecode of a bad name): pickle keeps it
    if not allow_pickle:
        raise TypeError(
            "it is not plain data (str, int, float, bool, None, bytes, and lists and "
            "str-keyed dicts of those) and the store has allow_pickle=False"
        )
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=5).dump(value)
    return PICKLE, buffer.getvalue()


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
    if tag == PICKLE:
        if not allow_pickle:
            raise IntegrityError(key, "holds a pickled value and the store has allow_pickle=False")
        return cloudpickle.loads(data)
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
