"""Segments: a run's records on an object store, grouped so that a resume
reads a few objects instead of one per record.

Only the run's lease holder writes segments (`segmenter`). A segment is one
create-only object `segments/<a>-<b>` holding the changes of flushes a..b:
each entry is a record (its name and sealed bytes, as the single object held
them) or a deletion; the whole is packed and sealed with the record
functions (`codec.pack`, `records.seal`: a checksum, or an HMAC with a
signing key). After writing one, the holder deletes the single objects it
covers; a crash in between leaves both, and they must agree.

Reading a run (`read_snapshot`): one listing, then one batched read of the
segments not contained in a larger one (a merge) and of every single object.
Segments apply in order; a single object whose name a segment mentions must
hold the bytes of that name's first mention (it was written before that
segment and not removed yet: the holder never writes a single object again
for a name a segment holds); any other single object is a record written
since. A disagreement, a missing segment or a damaged one raises
`CorruptRecordError`: nothing is guessed. One disagreement is no damage: a
sound single object holding another output of the very call the segment
holds, sent by a holder that lost its lease and arriving late (`_late_copy`)."""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable
from dataclasses import field
from typing import Protocol

from .._errortext import warn
from .._frozen import Compared, dataclass
from ..errors import CorruptRecordError, StorageError
from .codec import pack, unpack
from .keys import (
    CANCEL,
    SEGMENTS,
    in_space,
    is_foreign,
    is_record,
    position_of,
    segment_name,
    segment_of,
)
from .records import StepRecord, seal, unseal

_FORMAT = 1
_ATTEMPTS = 8  # re-reads while the holder moves records into segments
_PAGE = 1000  # keys in one page of an S3 listing

Entry = tuple[str, "bytes | None"]  # a record, or None: the record was dropped


class Reader(Protocol):
    def get_many(self, keys: builtins.list[str]) -> dict[str, bytes]: ...
    def list(self, prefix: str) -> builtins.list[str]: ...


class Objects(Reader, Protocol):
    """The store as the lease holder writes segments to it (`segmenter`)."""

    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, data: bytes) -> None: ...
    def create(self, key: str, data: bytes) -> bool: ...
    def delete(self, keys: Iterable[str]) -> None: ...


def encode_segment(entries: Iterable[Entry], key: bytes | None) -> bytes:
    return seal(pack([_FORMAT, [[name, data] for name, data in entries]]), key)


def decode_segment(data: bytes, key: bytes | None, run_id: str, name: str) -> list[Entry]:
    body = unseal(data, key, run_id=run_id, position=None, name=name)
    try:
        version, rows = unpack(body)
        entries = [(str(n), d) for n, d in rows if isinstance(n, str) and is_record(n)]
        ok = version == _FORMAT and len(entries) == len(rows)
        ok = ok and all(d is None or isinstance(d, bytes) for _, d in entries)
    except (ValueError, TypeError) as e:
        raise CorruptRecordError(run_id, None, name, f"not a segment ({e})") from None
    if not ok:
        raise CorruptRecordError(run_id, None, name, "not a segment of this format")
    return entries


@dataclass
class Snapshot(Compared):
    """A run's records as read at one moment, and how they are stored."""

    records: dict[str, bytes] = field(default_factory=dict)
    latest: dict[str, bytes | None] = field(default_factory=dict)  # by the segments
    singles: dict[str, bytes] = field(default_factory=dict)  # every single object
    covered: set[str] = field(default_factory=set)  # singles a segment also holds
    live: list[str] = field(default_factory=list)  # the segments read, in order
    superseded: list[str] = field(default_factory=list)  # contained in a merge
    last: int = 0  # the highest flush number any segment names
    marked: bool = False  # the listing showed the run's cancel marker
    foreign: list[str] = field(default_factory=list)  # keys of other incarnations' records


def read_snapshot(
    store: Reader, root: str, run_id: str, key: bytes | None, where: str = ""
) -> Snapshot:
    """The run's records (below its prefix `root`) of the incarnation whose
    folder is `where` (`keys.space`): see the module docstring. Those of
    any other are absent here, and listed in `foreign`."""
    base = root + where
    for _ in range(_ATTEMPTS):
        everything = [k[len(root) :] for k in store.list(root)]
        listed = [n for k in everything if (n := in_space(k, where)) is not None]
        live, superseded = cover(listed, run_id)
        singles = [n for n in listed if is_record(n)]
        wanted = [base + n for n in (*live, *singles)]
        got = store.get_many(wanted)
        if len(got) == len(wanted) and _settled(store, base, listed, len(everything)):
            snap = Snapshot(live=live, superseded=superseded)
            snap.foreign = [root + k for k in everything if is_foreign(k, where)]
            snap.last = max((r[1] for n in listed if (r := segment_of(n))), default=0)
            snap.marked = CANCEL in everything
            segs = [(n, decode_segment(got[base + n], key, run_id, n)) for n in live]
            merge(snap, segs, {n: got[base + n] for n in singles}, run_id, key)
            return snap
        # Something listed is gone: the holder moved records into a segment
        # (or dropped them) meanwhile. A fresh listing shows where they are.
    why = "the records kept changing while read"
    raise StorageError(getattr(store, "url", base), f"{base}: {why}", "try again")


def _settled(store: Reader, base: str, listed: list[str], count: int) -> bool:
    """Whether the listing was one view of the run. A long one comes in pages
    (1,000 keys each on S3): a segment written between two pages could hold
    records whose single objects a later page no longer shows, so the
    segments are listed again and must not have changed."""
    if count < _PAGE:
        return True
    again = [k[len(base) :] for k in store.list(base + SEGMENTS)]
    return again == [n for n in listed if segment_of(n) is not None]


def cover(listed: Iterable[str], run_id: str) -> tuple[list[str], list[str]]:
    """(the segments to read, in order; those a merge contains). The ones
    read must cover flushes 1..n without a gap."""
    ranges = sorted((r, n) for n in listed if (r := segment_of(n)) is not None)
    live: list[tuple[tuple[int, int], str]] = []
    superseded = []
    for (first, last), name in sorted(ranges, key=lambda x: (x[0][0], -x[0][1])):
        if live and last <= live[-1][0][1]:
            superseded.append(name)  # a merge written later holds all of it
            continue
        expected = live[-1][0][1] + 1 if live else 1
        if first != expected:
            gap = segment_name(expected, first - 1) if first > expected else name
            why = "a segment is missing" if first > expected else "segments overlap"
            raise CorruptRecordError(run_id, None, gap, why)
        live.append(((first, last), name))
    return [n for _, n in live], superseded


def merge(
    snap: Snapshot,
    segments: list[tuple[str, list[Entry]]],
    singles: dict[str, bytes],
    run_id: str,
    key: bytes | None,
) -> None:
    first: dict[str, tuple[str, bytes | None]] = {}
    for seg, entries in segments:
        for name, data in entries:
            first.setdefault(name, (seg, data))
            snap.latest[name] = data
    snap.records = {n: d for n, d in snap.latest.items() if d is not None}
    snap.singles = singles
    for name, data in singles.items():
        if name not in first:
            snap.records[name] = data  # written since the last segment
            continue
        seg, held = first[name]
        if held != data:
            # A planted or damaged object says so itself (IntegrityError,
            # CorruptRecordError naming it); a sound one still disagrees.
            single = unseal(data, key, run_id=run_id, position=position_of(name), name=name)
            if not _late_copy(single, held, key, run_id, name):
                why = f"the single object disagrees with segment {seg} about it"
                raise CorruptRecordError(run_id, position_of(name), name, why, advice=_advice(seg))
        snap.covered.add(name)  # the holder deletes it


def _late_copy(single: bytes, held: bytes | None, key: bytes | None, run_id: str, name: str) -> bool:
    """Whether a sound single object is another output of the very call the
    segment holds (position, kind, name, fingerprint and arguments): a
    holder that lost its lease sent it before the takeover and it arrived
    after the new holder had moved the name into a segment and deleted the
    single (a create-only write then finds the name free). The holder never
    writes a single object again for a name a segment holds, so the
    segment's copy is the one the run went on with; the other is dropped.
    Anything else that disagrees is damage, and fails closed."""
    if held is None:
        return False  # the segment dropped the record: nothing vouches for the single
    try:
        mine = StepRecord.from_bytes(unseal(held, key, run_id=run_id, position=None, name=name))
        late = StepRecord.from_bytes(single)
    except Exception:  # not an operation record (a timer's), or not one of this format
        return False
    if mine.args_digest is None:  # an older durable's: no call to tell it the same as
        return False
    fields = ("position", "kind", "name", "fingerprint", "args_digest")
    return all(getattr(mine, f) == getattr(late, f) for f in fields)


def _advice(segment: str) -> str:
    return (
        f"Neither copy is trusted: delete the single object to keep what {segment} holds, "
        "or start the run afresh with restart=True (durable run --restart)"
    )


def told_leftovers(root: str, run_id: str, keys: list[str]) -> None:
    """Other incarnations' objects the holder deleted (`Snapshot.foreign`),
    said: silent, objects of the run went missing with nothing to go by."""
    if keys:
        logging.getLogger("durable").warning(
            "run %r of %r: deleted %d object(s) another incarnation of the run left (%s%s): "
            "late writes of a run removed or restarted under this id (its process stalled "
            "past its lease), which landed after it was; this run never read them",
            run_id, root.rstrip("/").rpartition("/")[0], len(keys), keys[0],
            f" and {len(keys) - 1} more" if len(keys) > 1 else "",
        )  # fmt: skip



class told_undeleted:
    """The holder's delete of `count` single objects its segments hold, its
    failure said once per run (then raised, and tried again at the next
    flush): a store that never deletes (a bucket policy without
    s3:DeleteObject) kept every single object beside its segment, flush
    after flush, with nothing to tell why the run grew and read slower. A
    class, not a generator: the warning points past durable's frames, and
    contextlib's would be taken for the caller's."""

    def __init__(self, root: str, run_id: str, count: int) -> None:
        self.root, self.run_id, self.count = root, run_id, count

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: object, e: BaseException | None, tb: object) -> None:
        where = (self.root, self.run_id)
        if isinstance(e, StorageError) and where not in _UNDELETED:
            _UNDELETED.add(where)
            warn(
                f"run {self.run_id!r} of {self.root.rstrip('/').rpartition('/')[0]!r}: the store "
                f"did not delete {self.count} record object(s) a segment of the run now holds "
                f"({e.cause}). Nothing is lost and the run goes on, but such objects are kept "
                "beside their segments and each resume reads them: let durable delete under "
                "the store's prefix (s3:DeleteObject on S3). Said once per run.",
            )


_UNDELETED: set[tuple[str, str]] = set()  # (root, run id): said (`told_undeleted`)
