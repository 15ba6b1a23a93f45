"""Values to bytes and back. msgpack for data that round-trips exactly,
cloudpickle (tagged) for everything else. The only module that imports
msgpack; cloudpickle is in `codec_pickle`, loaded when a value needs it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import msgpack

from ..errors import IntegrityError
from .exactpack import BIN_MARKER, SCALARS, holds_byte_buffer, unplain
from .exactpack import only_scalars as only_scalars  # _core.sharing asks it too

MSGPACK = "m"
PICKLE = "p"
# A pickle whose large buffers (numpy arrays...) follow it, each aligned,
# so that a reader holding the bytes in writable memory of its own gets
# the arrays without a copy (the step cache's blobs; `codec_pickle`).
PICKLE_OOB = "P"


def pack_plain(value: Any, *, sharing: bool = True) -> bytes | None:
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
    would change recorded digests and fingerprints, so they stay apart.
    `sharing=False`: a value holding one list or dict twice is taken too
    (it comes back holding two)."""
    try:
        packed = _packers.strict_pack(value)
    except (_NotPlain, UnicodeEncodeError, OverflowError):
        # UnicodeEncodeError: a str with lone surrogates (os.fsdecode of a
        # bad name), which pickle keeps.
        return None
    except ValueError as e:  # msgpack's own limits: too deep, or too large
        if "recursion" in str(e):
            raise ValueError(_TOO_DEEP) from None
        raise
    # msgpack packs a bytearray or a memoryview as bytes, even with
    # `strict_types`: they would come back as bytes. A scalar holds none;
    # otherwise only a value whose bytes hold a bin marker can hold one (a
    # list of ints mostly does: 196 packs as cc c4). A list or dict holding
    # one list or dict twice would come back holding two (`unplain`).
    t = type(value)
    if t in SCALARS:
        return packed
    if t is not list and t is not dict:
        return None if BIN_MARKER.search(packed) is not None and holds_byte_buffer(value) else packed
    return None if unplain(value, sharing) else packed


class _NotPlain(Exception):
    pass


def _not_plain(value: Any) -> Any:
    raise _NotPlain


class _Packers(threading.local):
    """This thread's msgpack Packers: making one costs as much as packing a
    record. A Packer empties its buffer after every `pack`, also one that
    raised, and `_not_plain` never packs, so a thread never re-enters one."""

    def __init__(self) -> None:
        # Bound once: every step's output and record goes through them (a
        # thread-local attribute read and a call, nothing made on the way).
        self.plain_pack: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack
        strict = msgpack.Packer(use_bin_type=True, strict_types=True, default=_not_plain)
        self.strict_pack: Callable[[Any], bytes] = strict.pack


_packers = _Packers()


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
        if packed is None and not allow_pickle:  # kept as before, as two lists: not refused
            packed = pack_plain(value, sharing=False)
        if packed is not None:
            return MSGPACK, packed
        if out_of_band:
            return _pickle_out_of_band(value, allow_pickle)
        return pickle_value(value, allow_pickle)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


_TOO_DEEP = (
    "it is nested deeper than Python's recursion limit, or holds itself (a list, dict or "
    "object that contains itself: plain data cannot be recorded with a cycle)"
)


def pickle_value(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    """(PICKLE, bytes) for a value `pack_plain` refused."""
    _check_pickle(allow_pickle)
    from . import codec_pickle

    return PICKLE, codec_pickle.dumps(value)


def _pickle_out_of_band(value: Any, allow_pickle: bool) -> tuple[str, bytes]:
    _check_pickle(allow_pickle)
    from . import codec_pickle

    data, separate = codec_pickle.dumps_out_of_band(value)
    return (PICKLE_OOB if separate else PICKLE), data


def _check_pickle(allow_pickle: bool) -> None:
    if not allow_pickle:
        raise TypeError(
            "it is not plain data (str, int, float, bool, None, bytes, and lists and "
            "dicts of those, with scalar keys) and the store has allow_pickle=False"
        )


# A pickled value is not forged for being pickled: say how it got there.
_PICKLED = (
    "It was written by a process that allows pickled values (what is not plain data: "
    "a tuple, a set, a dataclass, ...). Read it without --no-pickle "
    "(allow_pickle=True, DURABLE_ALLOW_PICKLE unset) only if you trust whoever can "
    "write to this store: loading a pickle runs the code it names."
)


def decode_value(
    tag: str, data: bytes | memoryview, *, allow_pickle: bool = True, key: str = ""
) -> Any:
    if tag == MSGPACK:
        return unpack(data)
    if tag in (PICKLE, PICKLE_OOB):
        if not allow_pickle:
            raise IntegrityError(key, "holds a pickled value and the store has allow_pickle=False", advice=_PICKLED)
        from . import codec_pickle

        return codec_pickle.loads(data) if tag == PICKLE else codec_pickle.loads_out_of_band(data)
    raise ValueError(f"unknown value encoding {tag!r}")


def pack(obj: Any) -> bytes:
    return _packers.plain_pack(obj)


def unpack(data: bytes | memoryview) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


# A record's row as a replay compares it (`Recorded.row`): msgpack's defaults,
# no keywords parsed (a call's worth of instructions a replayed step); its
# map keys must be str, and a row with any other is decoded by `unpack`.
unpack_row: Callable[[bytes], Any] = msgpack.unpackb


def dumps_callable(obj: Any) -> bytes:
    """Pickle code for workers (loop_over executors)."""
    from . import codec_pickle

    return codec_pickle.dumps_callable(obj)


def dumps_noting(obj: Any) -> tuple[bytes, list[type]]:
    """`dumps_callable`, and the classes the bytes hold (by reference or by value)."""
    from . import codec_pickle

    return codec_pickle.dumps_noting(obj)


def digest_callable(obj: Any) -> bytes:
    """`dumps_callable`'s bytes as the same code gives them in every process (a digest's)."""
    from . import codec_pickle

    return codec_pickle.digest_callable(obj)


def loads_callable(data: bytes) -> Any:
    """The counterpart of dumps_callable, for what travels between the
    workflow process and its own workers (never for what a store holds)."""
    from . import codec_pickle

    return codec_pickle.loads(data)


def holds_any(value: Any, seen: Callable[[Any], bool]) -> bool:
    """Whether value's stored bytes would hold an object `seen` answers True for."""
    from . import picklescan

    return picklescan.holds_any(value, seen)
