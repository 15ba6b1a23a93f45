"""Values to bytes and back. msgpack for data that round-trips exactly,
cloudpickle (tagged) for everything else. The only module that imports
msgpack and cloudpickle."""

from __future__ import annotations

import io
import threading
from typing import Any

import cloudpickle
import msgpack

from ..errors import IntegrityError

MSGPACK = "m"
PICKLE = "p"


def pack_plain(value: Any) -> bytes | None:
    """The msgpack bytes of value when msgpack gives back exactly this
    value, with the same types; else None. ValueError when msgpack cannot
    hold it (nested too deep, a bytes or str over 4 GiB). One pass in C (a Packer per
    thread, `_packers`: one shared by threads would mix their bytes): `strict_types`
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
        return _packers.strict().pack(value)  # type: ignore[no-any-return]
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


class _Packers(threading.local):
    """This thread's msgpack Packers: making one costs as much as packing a
    record. A Packer empties its buffer after every `pack`, also one that
    raised, and `_not_plain` never packs, so a thread never re-enters one."""

    def __init__(self) -> None:
        self.plain = msgpack.Packer(use_bin_type=True)
        self._strict: msgpack.Packer | None = None

    def strict(self) -> msgpack.Packer:
        if self._strict is None:
            self._strict = msgpack.Packer(use_bin_type=True, strict_types=True, default=_not_plain)
        return self._strict


_packers = _Packers()


def is_plain(value: Any) -> bool:
    """Whether value is stored without pickle (`pack_plain`)."""
    return pack_plain(value) is not None


def encode_value(value: Any, *, allow_pickle: bool = True) -> tuple[str, bytes]:
    """Return (encoding tag, bytes). Raises whatever the pickler raises."""
    try:
        return _encode(value, allow_pickle)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


_TOO_DEEP = "it is nested deeper than Python's recursion limit"


def _encode(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    packed = pack_plain(value)
    if packed is not None:
        return MSGPACK, packed
    return pickle_value(value, allow_pickle)


def pickle_value(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    """(PICKLE, bytes) for a value `pack_plain` refused."""
    if not allow_pickle:
        raise TypeError(
            "it is not plain data (str, int, float, bool, None, bytes, and lists and "
            "dicts of those, with scalar keys) and the store has allow_pickle=False"
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
    return _packers.plain.pack(obj)  # type: ignore[no-any-return]


def unpack(data: bytes | memoryview) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def dumps_callable(obj: Any) -> bytes:
    """Pickle code for workers (loop_over executors)."""
    return cloudpickle.dumps(obj)  # type: ignore[no-any-return]


def loads_callable(data: bytes) -> Any:
    """The counterpart of dumps_callable, for what travels between the
    workflow process and its own workers (never for what a store holds)."""
    return cloudpickle.loads(data)
