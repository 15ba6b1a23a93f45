"""Values to bytes and back. msgpack for data that round-trips exactly,
cloudpickle (tagged) for everything else. The only module that imports
msgpack and cloudpickle."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import cloudpickle
import msgpack

from ._errors import IntegrityError

MSGPACK = "m"
PICKLE = "p"
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def is_plain(value: Any) -> bool:
    """True when msgpack gives back exactly this value, with the same types."""
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
    return PICKLE, cloudpickle.dumps(value, protocol=5)


def decode_value(tag: str, data: bytes, *, allow_pickle: bool = True, key: str = "") -> Any:
    if tag == MSGPACK:
        return unpack(data)
    if tag == PICKLE:
        if not allow_pickle:
            raise IntegrityError(key, "holds a pickled value and the store has allow_pickle=False")
        return cloudpickle.loads(data)
    raise ValueError(f"unknown value encoding {tag!r}")


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)  # type: ignore[no-any-return]


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def dumps_callable(obj: Any) -> bytes:
    """Pickle code for workers (loop_over executors)."""
    return cloudpickle.dumps(obj)  # type: ignore[no-any-return]


def loads_callable(data: bytes) -> Any:
    """The counterpart of dumps_callable, for what travels between the
    workflow process and its own workers (never for what a store holds)."""
    return cloudpickle.loads(data)


# Canonical digests: a value's identity independent of the process, used for
# run ids and argument comparison. Only data with one obvious encoding counts.
class NotCanonical(TypeError):
    pass


def canonical_digest(value: Any) -> str:
    h = hashlib.sha256()
    try:
        _feed(h, value)
    except RecursionError:
        raise NotCanonical(_TOO_DEEP) from None
    return h.hexdigest()


def _feed(h: Any, v: Any) -> None:
    t = type(v)
    if v is None or t is bool:
        h.update(f"{t.__name__}:{v};".encode())
    elif t is int or t is float or t is complex:
        h.update(f"{t.__name__}:{v!r};".encode())
    elif t is str:
        _feed_bytes(h, b"s", v.encode("utf-8", "surrogatepass"))
    elif t is bytes or t is bytearray:
        _feed_bytes(h, b"b", bytes(v))
    elif t is list or t is tuple:
        h.update(f"{t.__name__}[{len(v)}".encode())
        for item in v:
            _feed(h, item)
        h.update(b"]")
    elif t is dict:
        _feed_items(h, b"d", list(v.items()))
    elif t is set or t is frozenset:
        _feed_items(h, t.__name__.encode(), [(x, None) for x in v])
    else:
        _feed_other(h, v)


def _feed_bytes(h: Any, tag: bytes, data: bytes) -> None:
    h.update(tag + str(len(data)).encode() + b":" + data)


def _feed_items(h: Any, tag: bytes, items: list[tuple[Any, Any]]) -> None:
    entries = []
    for k, val in items:
        sub = hashlib.sha256()
        _feed(sub, k)
        _feed(sub, val)
        entries.append(sub.digest())
    h.update(tag + b"{")
    for e in sorted(entries):
        h.update(e)
    h.update(b"}")


def _feed_other(h: Any, v: Any) -> None:
    import dataclasses
    import datetime
    import decimal
    import enum
    import pathlib
    import uuid

    t = type(v)
    name = f"{t.__module__}.{t.__qualname__}"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
        h.update(f"dc:{name}".encode())
        _feed(h, fields)
    elif isinstance(v, enum.Enum):
        h.update(f"enum:{name}".encode())
        _feed(h, v.value)
    elif isinstance(
        v, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal, uuid.UUID)
    ) or isinstance(v, pathlib.PurePath):
        _feed_bytes(h, f"x:{name}".encode(), repr(v).encode())
    elif isinstance(v, Mapping):
        h.update(f"map:{name}".encode())
        _feed(h, dict(v))
    else:
        raise NotCanonical(f"{name} has no canonical form")
