"""The on-disk schema: a msgpack row with a format version, in a sealed
envelope (`envelope`). Runs have a manifest; operations have records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, field, fields
from sys import intern
from typing import TYPE_CHECKING, Any, NoReturn

from .._errortext import unrecordable
from .._frozen import Compared, dataclass
from ..errors import SerializationError
from .argdigest import digest_of
from .codec import MSGPACK, PICKLE, _packers, encode_value, unpack

# The envelope has a module of its own; most callers take it from here.
from .envelope import intact_body as intact_body
from .envelope import seal as seal
from .envelope import seal_record as seal_record
from .envelope import sealed_body as sealed_body
from .envelope import sealed_head as sealed_head
from .envelope import sealed_sum as sealed_sum
from .envelope import unseal as unseal
from .keys import Position, as_position
from .runrecord import RunRecord as RunRecord  # a manifest: a module of its own

# So has reading a value back (`storedread`); _core and `manifest` take it from here.
from .storedread import decode_stored as decode_stored
from .storedread import load_stored as load_stored
from .storedread import stored_bytes as stored_bytes

if TYPE_CHECKING:
    from .base import Store

# 2: a step record may keep its call's canonical argument bytes (`args_bytes`, the
# last field) in place of their digest (the digest field is then nil, made of
# them when read). A row of format 1 (no such field) reads as one without them.
FORMAT = 2
FORMAT_1 = 1
_new = object.__new__


def keep_encoded(
    store: Store,
    where: tuple[str, str],
    data: bytes,
    claim: Callable[[str], None] | None = None,
) -> tuple[bytes | None, str | None]:
    """(inline bytes, None), or (None, blob digest) for data over the
    store's blob threshold: stored once, sealed, under `blobs/<sha256>`
    (`claim`: see `Store.put_blob`)."""
    if len(data) <= store.blob_threshold:
        return data, None
    return None, store.put_blob(*where, seal(data, store.signing_key), claim)


def keep_plain(store: Store, where: tuple[str, str], record: StepRecord, packed: bytes) -> None:
    """Put a value `codec.pack_plain` already encoded into its record."""
    record.encoding, small = MSGPACK, len(packed) <= store.blob_threshold  # most: no call
    record.value, record.blob = (packed, None) if small else keep_encoded(store, where, packed)


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
        kind = record.kind
        raise SerializationError(
            record.name, type(value).__qualname__, f"{type(e).__name__}: {e}",
            pickles=store.allow_pickle, **unrecordable(
                record.name, answer=kind == INPUT_KIND, block=kind in ("loop", "item"),
                pickles=store.allow_pickle,
            ),
        ) from e  # fmt: skip
    return data


@dataclass
class Attempt(Compared):
    """A failed try of a step, as its attempts record keeps it."""
    type: str
    message: str
    traceback: str
    at: float


INPUT_KIND = "input"  # the kind of a `wait_for` position's record
# The kind of a `loop_over` item's failed tries (`_fanout.tries`), and the
# start of its argument digest: never an item's, so that no version reads
# it as an item's result (one that knows no such kind matches by digest).
TRIES_KIND, TRIES_MARK = "tries", "tries:"
# The kinds and value encodings records hold, each shared by every record
# that holds it: a lookup here costs less than interning the string read.
_COMMON = {s: s for s in ("step", "loop", "sleep", "item", "workflow", INPUT_KIND, MSGPACK, PICKLE)}


@dataclass(slots=True)  # a replay keeps one per position: no __dict__ each
class StepRecord(Compared):
    """What a position of a run recorded."""
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
    # The canonical bytes its argument digest hashes, when short and of numbers only
    # (`callbytes.kept_bytes`): stored instead of the digest, which is theirs, so
    # that a replay compares a call's own bytes with them and makes no hash.
    args_bytes: bytes | None = None

    # A positional array, not a map: records are read on every replay, and
    # an array of ~15 fields decodes in about half the time.
    def to_bytes(self) -> bytes:
        # Spelled out in `fields` order (a test holds them together): this
        # runs once per step, and a getattr loop (or `codec.pack`'s call) costs more.
        kept = self.args_bytes
        return _packers.plain_pack([
            FORMAT, self.position, self.kind, self.name, self.fingerprint,
            self.args_digest if kept is None else None,
            self.encoding, self.value, self.blob, self.persisted, self.started, self.ended,
            [asdict(a) for a in self.attempts] if self.attempts else [],
            self.artifacts, self.extra, self.args_bytes,
        ])  # fmt: skip

    @classmethod
    def made(
        cls, position: Position, name: str, fingerprint: str, args_digest: str, started: float,
        attempts: list[Attempt], artifacts: list[dict[str, Any]],
    ) -> StepRecord:
        """`StepRecord(position, "step", ..., started=, attempts=, artifacts=)`,
        the others at their defaults (a test holds them together), without a
        class call: that calls `__init__` from C, costlier than this method."""
        rec = _new(cls)
        rec.position, rec.kind, rec.name, rec.fingerprint = position, "step", name, fingerprint
        rec.args_digest, rec.encoding, rec.value, rec.blob = args_digest, None, None, None
        rec.persisted, rec.started, rec.ended = True, started, 0.0
        rec.attempts, rec.artifacts, rec.extra, rec.args_bytes = attempts, artifacts, {}, None
        return rec

    @classmethod
    def from_bytes(cls, body: bytes, *, interned: bool = True) -> StepRecord:
        """`interned=False`: the name and fingerprint are left as read (a
        fresh string each costs less than interning it); a caller keeping
        many records shares them itself once it compared them
        (`replay.lookup`)."""
        row = unpack(body)
        if type(row) is not list or len(row) != ROW or row[0] != FORMAT:
            row = _every_field(cls, row)
        (_, position, kind, name, fingerprint, digest, encoding, value, blob,
         persisted, started, ended, attempts, artifacts, extra, kept) = row  # fmt: skip
        if type(position) is not int or position < 0:  # else a body position, as it is
            read = as_position(position)
            if read is None:
                raise ValueError(f"not a position: {position!r}")
            position = read
        if attempts or type(attempts) is not list:  # not a list: undecodable
            attempts = [Attempt(**a) for a in attempts]
        # Made field by field, without `__init__` (a Python call per replayed
        # step): the row holds every field, in `fields` order (unpacked above).
        rec = _new(cls)
        rec.position, rec.value, rec.blob = position, value, blob
        if kept is not None:  # the digest is theirs: one of the two, never both
            if digest is not None or type(kept) is not bytes:
                raise ValueError("an argument digest and the bytes it hashes")
            digest = digest_of(kept)
        rec.args_digest, rec.args_bytes = digest, kept
        # Every record of a step repeats these: one copy of each in memory.
        rec.kind = _COMMON.get(kind) or intern(kind)
        rec.encoding = None if encoding is None else _COMMON.get(encoding) or intern(encoding)
        if interned:
            name, fingerprint = intern(name), intern(fingerprint)
        rec.name, rec.fingerprint = name, fingerprint
        rec.persisted, rec.started, rec.ended = persisted, started, ended
        # Most records have no attempts, artifacts or extra: one shared empty
        # each, which cannot be changed, instead of three containers a record
        # for the garbage collector to walk (a replay keeps every record).
        rec.attempts = attempts or NO_ITEMS
        rec.artifacts = NO_ITEMS if not artifacts and type(artifacts) is list else artifacts
        rec.extra = NO_EXTRA if not extra and type(extra) is dict else extra
        return rec


def _every_field(cls: type[StepRecord], row: Any) -> list[Any]:
    """A row that is not `to_bytes`'s as it is now: refused, or one written
    without the fields added since (format 1 included), which take their
    defaults (TypeError if it has too few or too many)."""
    if not isinstance(row, list) or not row or row[0] not in (FORMAT_1, FORMAT):
        raise ValueError("unknown record format")
    if row[0] == FORMAT_1 and len(row) > ROW - 1:
        raise ValueError("a record of format 1 with the fields of a later one")
    made = cls(*row[1:])
    return [FORMAT, *(getattr(made, name) for name in STEP_FIELDS)]


class _Shared(dict[str, Any]):
    """The `extra` of the decoded records that have none: shared, so it
    refuses every change (a record to be changed gets a dict of its own)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("the empty `extra` of decoded records is shared: assign a new dict")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse
    __ior__ = _refuse


# Shared by the records a run keeps (`from_bytes`, `Recorded.keep`).
NO_ITEMS: Any = ()  # attempts, artifacts
NO_EXTRA: Any = _Shared()


STEP_FIELDS = [f.name for f in fields(StepRecord)]
ROW = 1 + len(STEP_FIELDS)  # FORMAT, then every field (`to_bytes`)
