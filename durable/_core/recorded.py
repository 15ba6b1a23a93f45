"""A run's step records as replay holds them: read once from the log,
decoded lazily. Each position keeps the sealed bytes the log gave until the
run reaches it (or something asks for every record); only then is the
envelope checked (CRC or signature) and the record decoded, so a resume
that stops early decodes only what it replayed, and a damaged record is
refused when reached, before anything at or after it replays or runs.
Each envelope is checked once: a replay that compared a record's row
without decoding it (`row`) keeps its checked body, which a later `get`
decodes without checking it again."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from operator import attrgetter
from typing import Any

from .._storage.base import Store
from .._storage.codec import unpack_row
from .._storage.keys import Position, format_position, record_name
from .._storage.noted import CARRIED, DAMAGE, THERE
from .._storage.records import (
    FORMAT,
    FORMAT_1,
    NO_EXTRA,
    NO_ITEMS,
    ROW,
    StepRecord,
    intact_body,
    unseal,
)
from ..errors import CorruptRecordError


class Recorded(MutableMapping[Position, StepRecord]):
    """Position -> StepRecord, decoding on first access. A record decoded
    is held instead of its bytes (records are kept once)."""

    __slots__ = ("_bodies", "_decoded", "_raw", "_run_id", "_store")

    def __init__(self, store: Store | None = None, run_id: str = "") -> None:
        self._store, self._run_id = store, run_id
        self._decoded: dict[Position, StepRecord] = {}
        self._raw: dict[Position, bytes] = {}  # sealed, as read from the log
        # Bodies whose envelope `row` checked and whose row it compared (a
        # replay's records, most of them): decoded when asked, not checked again.
        self._bodies: dict[Position, bytes] = {}

    def keep_sealed(self, pos: Position, raw: bytes) -> None:
        """The sealed record at pos, decoded when first asked for."""
        self._decoded.pop(pos, None)
        self._bodies.pop(pos, None)
        self._raw[pos] = raw

    def keep_all_sealed(self, sealed: dict[Position, bytes]) -> None:
        """`keep_sealed` of each (a resume's whole log): one call, not one a record."""
        for pos in sealed if self._decoded or self._bodies else ():
            self._decoded.pop(pos, None)  # as `keep_sealed`: most were never decoded
            self._bodies.pop(pos, None)
        if self._raw:
            self._raw.update(sealed)
        else:
            self._raw = sealed

    def row(self, pos: Position) -> list[Any] | None:
        """The row of the record at body position pos not read yet, its
        envelope checked (THE check, `intact_body`; its body is kept, so a
        later `get` decodes it without a second one), for a replay to compare
        (`replayrow`) without a record made of it. None when there is no
        such record, it was read already, or it is anything but an intact
        unsigned envelope holding a current row of this position: `get`
        then decides, and names what is wrong."""
        raw = self._raw.get(pos)
        if raw is None:
            return None
        assert self._store is not None  # bytes are only kept with their store
        body = intact_body(raw, self._store.signing_key)
        try:  # msgpack's defaults: a row's map keys are str (else `get` decodes it)
            row = body is not None and unpack_row(body)
        except Exception:
            return None
        if type(row) is not list or len(row) != ROW or row[0] != FORMAT:
            if type(row) is not list or len(row) != ROW - 1 or row[0] != FORMAT_1:
                return None  # `get` decides, and names what is wrong
            row.append(None)  # a row of format 1 keeps no argument bytes
        if row[1] != pos or type(row[1]) is not int:  # `decode_step_record`'s position check
            return None
        del self._raw[pos]
        if not self._raw:  # as `get`
            self._raw = {}
        self._bodies[pos] = body  # type: ignore[assignment]
        return row

    def get(self, pos: Position, default: StepRecord | None = None) -> StepRecord | None:  # type: ignore[override]
        rec = self._decoded.get(pos)
        if rec is not None:
            return rec
        if self._bodies:
            body = self._bodies.pop(pos, None)
            if body is not None:  # checked by `row`
                try:
                    rec = self._decoded[pos] = decoded_body(body, self._run_id, pos, None, False)
                    if CARRIED in rec.extra:
                        shed(rec)
                except BaseException:
                    self._bodies[pos] = body  # asked again, it is refused again
                    raise
                return rec
        raw = self._raw.pop(pos, None)
        if raw is None:
            return default
        if not self._raw:  # all decoded: a dict never shrinks, a new one is empty
            self._raw = {}
        assert self._store is not None  # bytes are only kept with their store
        try:  # decoded here, not in a helper: once per replayed step
            rec = self._decoded[pos] = decode_step_record(
                self._store, raw, self._run_id, pos, interned=False
            )
            if CARRIED in rec.extra:
                shed(rec)
        except BaseException:
            self._raw[pos] = raw  # asked again, it is refused again
            raise
        return rec

    def __getitem__(self, pos: Position) -> StepRecord:
        rec = self.get(pos)
        if rec is None:
            raise KeyError(pos)
        return rec

    def keep(self, rec: StepRecord) -> None:
        """Keep a record just written (every recorded step: one call): its
        empty attempts, artifacts and extra become the shared empties a
        decoded record holds (`from_bytes`), not three containers a record
        for the garbage collector to walk."""
        if not rec.attempts:
            rec.attempts = NO_ITEMS
        if not rec.artifacts:
            rec.artifacts = NO_ITEMS
        if not rec.extra:
            rec.extra = NO_EXTRA
        elif CARRIED in rec.extra:
            shed(rec)
        if self._raw:  # `__setitem__`, inline
            self._raw.pop(rec.position, None)
        if self._bodies:
            self._bodies.pop(rec.position, None)
        self._decoded[rec.position] = rec

    def __setitem__(self, pos: Position, rec: StepRecord) -> None:
        if self._raw:  # none left undecoded: a run's every new record, no call
            self._raw.pop(pos, None)
        if self._bodies:
            self._bodies.pop(pos, None)
        self._decoded[pos] = rec

    def __delitem__(self, pos: Position) -> None:
        found = self._decoded.pop(pos, None) is not None
        found = self._bodies.pop(pos, None) is not None or found
        if self._raw.pop(pos, None) is None and not found:
            raise KeyError(pos)

    def __contains__(self, pos: object) -> bool:
        return pos in self._decoded or pos in self._bodies or pos in self._raw

    def __iter__(self) -> Iterator[Position]:
        # All taken now, in C (a resume lists every position): a position
        # decoded while the caller iterates is neither missed nor seen twice.
        return iter([*self._decoded, *self._bodies, *self._raw])

    def __len__(self) -> int:
        return len(self._decoded) + len(self._bodies) + len(self._raw)

    def __repr__(self) -> str:
        n = len(self._bodies) + len(self._raw)
        return f"<records: {len(self._decoded)} decoded, {n} not yet>"

    def decoded_all(self) -> dict[Position, StepRecord] | None:
        """Every record by position, when each is decoded already (a run
        that reached them all), to be read, not changed; None while some
        are not. A run's end reads each record once more: without a Python
        call each that way."""
        return self._decoded if len(self._decoded) == len(self) else None

    def list_artifacts(self) -> bool:
        """Whether a record lists artifacts, its own or its child run's."""
        done = self.decoded_all()
        if done is None:  # some not reached: decoded in turn, as iterating gives them
            return any(map(_lists_artifacts, self.values()))
        return any(map(_OWN_ARTIFACTS, done.values())) or any(
            _lists_artifacts(r) for r in done.values() if "child" in r.extra
        )

    def marks(self) -> Iterator[object]:
        """The mark each record carries (`noted.short`), decoded apart from
        the replay's decode, which sheds it; `THERE` for one that is damaged
        or decoded already."""
        for _ in list(self._decoded):
            yield THERE
        for pos, body in list(self._bodies.items()):
            try:
                rec = decoded_body(body, self._run_id, pos, None, False)
            except DAMAGE:
                yield THERE
            else:
                yield rec.extra.get(CARRIED)
        for pos, raw in list(self._raw.items()):
            assert self._store is not None  # bytes are only kept with their store
            try:
                rec = decode_step_record(self._store, raw, self._run_id, pos, interned=False)
            except DAMAGE:
                yield THERE
            else:
                yield rec.extra.get(CARRIED)


_OWN_ARTIFACTS = attrgetter("artifacts")


def _lists_artifacts(rec: StepRecord) -> bool:
    return bool(rec.artifacts or rec.extra.get("child", {}).get("artifacts"))


def decode_step_record(
    store: Store,
    raw: bytes,
    run_id: str,
    pos: Position,
    name: str | None = None,
    *,
    interned: bool = True,
) -> StepRecord:
    """THE check and decode of a sealed step record read for position pos:
    CorruptRecordError (or IntegrityError) when it is damaged, forged,
    undecodable or another position's. `name` (the record's, for messages)
    is spelled from pos when not given, and only when one is raised.
    `interned`: as `StepRecord.from_bytes` takes it."""
    body = intact_body(raw, store.signing_key)
    if body is None:
        name = name or record_name(pos)
        body = unseal(raw, store.signing_key, run_id=run_id, position=pos, name=name)
    return decoded_body(body, run_id, pos, name, interned)


def decoded_body(
    body: bytes, run_id: str, pos: Position, name: str | None, interned: bool
) -> StepRecord:
    """`decode_step_record` of a body whose envelope was checked."""
    try:
        rec = StepRecord.from_bytes(body, interned=interned)
    except Exception as e:
        raise CorruptRecordError(run_id, pos, name or record_name(pos), f"undecodable: {e}") from e
    if rec.position != pos:  # a valid record moved to another position
        why = f"it holds position {format_position(rec.position)}"
        raise CorruptRecordError(run_id, pos, name or record_name(pos), why)
    rec.position = pos  # equal: the caller's object, often a key already, is kept once
    return rec


def shed(rec: StepRecord) -> None:
    """A record as a run keeps it: without the mark it carries, which only
    `noted.short` reads, from its bytes (a replay keeps every record)."""
    extra = rec.extra
    rec.extra = NO_EXTRA if len(extra) == 1 else {k: v for k, v in extra.items() if k != CARRIED}
