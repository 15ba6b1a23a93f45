"""What a run's manifest notes about its records: how many there are
(`operations`) and which top-level positions hold one (`finished`, as
ranges). A reader that finds fewer (`lost`) knows records were deleted or
lost since: a resume refuses rather than run those finished steps again
(`_core.outcome.records_kept`), a completed run's history rather than show
a shorter one. The engine notes them when an attempt starts, when it ends,
and before a rerun drops records (`_core.finished.lower`).

An attempt killed (`kill -9`) notes nothing when it ends: each record it
writes carries (`carry`) the note's token (`attempt`, new at each note) and
how many records were written under it before that one began, so a resume
after the kill knows at least how many that attempt made (`short`). A
record lost since is found unless it was the last one written: the records
a kill leaves are a prefix of those written, and no later one tells of it.
Allowed: a kill takes no record written, and a power loss only what the
durability level gives up (docs/managing-runs.md says why no more is kept).

A local log also notes how many of its bytes were on stable storage
(`synced`: when an attempt starts, when it ends) and the level its attempt
writes under: damage past them, under "batch" or "none", is what a power
loss may leave of records the level gives up (`unsynced_from`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CorruptRecordError, IntegrityError
from .durability import LEVELS
from .keys import Position, top_level

DAMAGE = (CorruptRecordError, IntegrityError)
# Past this many ranges (a run with many gaps) only the count is kept: the
# manifest's summary stays small enough for a listing to read in one go.
RANGES_KEPT = 64


def note(
    extra: dict[str, Any],
    records: Iterable[Position],
    error: BaseException | None = None,
    level: str | None = None,
) -> None:
    """Note `records` as the run's in its manifest's `extra`. A record an
    attempt refused as damaged (`error`) is not one: deleting its object,
    as the refusal advises, is how to run just that operation again. Under
    durability `level` "none" nothing is noted: a power loss may take a
    record nobody deleted, and the step runs again (docs/storage.md)."""
    if level == "none":
        for key in ("operations", "finished", "attempt"):
            extra.pop(key, None)
        return
    # The records written from now on carry it: one int with their count
    # (`carry`), the cheapest mark to write and to read back.
    extra["attempt"] = int.from_bytes(os.urandom(4), "big") >> 1
    damaged = getattr(error, "position", None) if isinstance(error, DAMAGE) else None
    kept = [p for p in records if p != damaged] if damaged is not None else list(records)
    extra["operations"] = len(kept)
    runs = _ranges(_tops(kept))
    if len(runs) <= RANGES_KEPT:
        extra["finished"] = runs
    else:
        extra.pop("finished", None)


def lost(extra: Mapping[str, Any], records: Iterable[Position]) -> tuple[int, list[int]] | None:
    """(how many records were noted, the noted top-level positions that
    have none now), or None when none is missing."""
    expected = extra.get("operations")
    found = list(records)
    # A resume asks this of every record: made in C when all are top-level
    # (ints), and a range all there told by `issuperset`, not position by position.
    tops = set(found) if set(map(type, found)) <= {int} else {top_level(p) for p in found}
    runs = extra.get("finished")
    gone = [
        p for a, b in _valid(runs) if not tops.issuperset(range(a, b + 1))
        for p in range(a, b + 1) if p not in tops
    ]  # fmt: skip
    if not isinstance(expected, int) or (not gone and len(found) >= expected):
        return None
    return expected, gone


def carry(extra: dict[str, Any], token: int, before: int) -> dict[str, Any]:
    """A record's `extra` with what it carries: the note's `token`, and how
    many records were written under it `before` this one's write began
    (written in full: threads writing at once count none of each other's)."""
    return {**extra, CARRIED: token << 32 | min(before, COUNTED)}


def short(extra: Mapping[str, Any], marks: Iterable[object]) -> tuple[int, int] | None:
    """(how many records the attempt that last noted made at least, as the
    `marks` its records carry tell, how many of them are in the store), or
    None when none is missing. A record whose mark cannot be read (`THERE`:
    damaged, refused when the run reaches it) is there, not lost."""
    token = extra.get("attempt")
    if type(token) is not int:
        return None
    made = found = 0
    for mark in marks:
        if mark is THERE:
            found += 1
        elif type(mark) is int and mark >> 32 == token:
            found, made = found + 1, max(made, (mark & COUNTED) + 1)
    return (made, found) if found < made else None


def note_synced(extra: dict[str, Any], synced: int | None, level: str | None = None) -> None:
    """Note that the run's log held `synced` bytes on stable storage (None:
    no more than noted before: nothing was synced) and, when given, the
    durability level its attempt writes under from now on."""
    if level is not None:
        extra[LEVEL] = level
    if synced is not None:
        extra[SYNCED] = synced


def note_opened(extra: dict[str, Any], size: int | None, level: str | None) -> None:
    """An attempt opened the run's log, `size` bytes long, synced first
    unless under "none". Under "none" the bytes an attempt under "fsync"
    wrote count as synced too: each record was synced before its step
    returned (damage there stays an error); the rest stay as noted."""
    if level != "none" or extra.get(LEVEL) == "fsync":
        note_synced(extra, size, level)
    else:
        note_synced(extra, None, level)


def unsynced_from(extra: Mapping[str, Any]) -> int | None:
    """From which byte of the run's local log damage is what a power loss
    may leave, or None: none is. A power loss leaves holes (zeroed blocks,
    an entry's data zeroed under its header) only in bytes no fdatasync
    covered, and one covers the whole file, so every entry after such a
    hole was unsynced too: under "batch" and "none" records the level
    gives up. Under "fsync" each record was synced before its step
    returned, and a manifest written before these notes says nothing:
    there, damage is damage (fail closed)."""
    synced = extra.get(SYNCED, 0)
    if extra.get(LEVEL) not in ("batch", "none") or type(synced) is not int:
        return None
    return synced


CARRIED = "noted"
SYNCED, LEVEL = "synced", "durability"


def noted_level(extra: Mapping[str, Any]) -> str | None:
    """The level the run's last attempt wrote under (`durable show`), or
    None: a manifest of an older durable, or damaged there, notes none."""
    level = extra.get(LEVEL)
    return level if level in LEVELS else None
COUNTED = (1 << 32) - 1  # a count past it is kept as it: a lower bound still
THERE = object()


def _tops(kept: list[Position]) -> list[int]:
    """The top-level positions of `kept`, sorted, each once. Most runs hold
    body positions only (ints): sorted in C, without a call per record (an
    attempt notes every record twice); a path among them cannot be sorted
    with an int (TypeError), nor be the first or last of paths alone."""
    try:
        tops: list[Any] | None = sorted(set(kept))
    except TypeError:
        tops = None
    if tops is None or (tops and (type(tops[0]) is not int or type(tops[-1]) is not int)):
        return sorted({top_level(p) for p in kept})
    return tops


def _ranges(tops: list[int]) -> list[list[int]]:
    if tops and tops[-1] - tops[0] == len(tops) - 1:  # no gap (ints, each once): one range
        return [[tops[0], tops[-1]]]
    runs: list[list[int]] = []
    for p in tops:
        if runs and runs[-1][1] == p - 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return runs


def _valid(runs: object) -> list[tuple[int, int]]:
    """The ranges as noted; anything else (an older manifest has none) is none."""
    if not isinstance(runs, list):
        return []
    return [
        (r[0], r[1]) for r in runs
        if isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r) and 0 <= r[0] <= r[1]
    ]  # fmt: skip
