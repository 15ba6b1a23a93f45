"""Rewriting kept item records at their items' new indexes (the items moved
between calls) in an order a kill cannot make lose one. A record taken from
another index is kept only there until its copy is written: written over
first (two items that swapped places), a kill between the two writes would
lose a finished item's result, and the next resume would run it again."""

from __future__ import annotations

import os
from collections.abc import Callable

from .._storage.records import StepRecord

# A record kept at another index: that index, the record, and how to keep it
# at an index (an item's result and its failed tries are written apart).
Move = tuple[int, StepRecord, Callable[[int, StepRecord], None]]


def move_all(moves: dict[int, Move], spare: int) -> None:
    """Write each record of `moves` (by its item's index) at that index,
    after the record there, if one still waits for its own copy, has it.
    A cycle of moves has no such order: one record goes to `spare`
    and the indexes after it (beyond every record kept), where its item
    finds it next time, as a kept result is its item's wherever it is."""
    waiting = {move[0] for move in moves.values()}  # holding the only copy of a record
    ready = [new for new in moves if new not in waiting]
    while moves:
        if ready:
            new = dest = ready.pop()
        else:  # a cycle: no index is free to be written over
            new, dest, spare = min(moves), spare, spare + 1
        old, record, write = moves.pop(new)
        write(dest, record)
        waiting.discard(old)
        if old in moves:  # its record is copied: its own item's may come
            ready.append(old)


def mark(rec: StepRecord, kept: object = None) -> str:
    """Give a record about to be kept its id (`kept`, else a new one); its
    copies made by `move_all` carry the same."""
    rec.extra["kept"] = kept if isinstance(kept, str) else os.urandom(8).hex()
    return rec.extra["kept"]  # type: ignore[no-any-return]


def one_copy_each(records: dict[int, StepRecord]) -> dict[int, StepRecord]:
    """The records (of one item digest, by index) with one copy of each kept
    record: a moved record stays at its old index too, until the item now
    there writes over it, and the two copies are one result, or one budget,
    for one item. Of a budget's copies, the one with the most tries is the
    newest (the item failed again where it moved)."""
    newest: dict[str, int] = {}
    kept = dict(records)
    for index, rec in records.items():
        rid = rec.extra.get("kept")
        if not isinstance(rid, str):
            continue  # kept by a version without ids
        other = newest.setdefault(rid, index)
        if other == index:
            continue
        if len(rec.attempts) > len(kept[other].attempts):
            del kept[other]
            newest[rid] = index
        else:
            del kept[index]
    return kept


def take(found: dict[int, StepRecord] | None, index: int) -> tuple[int, StepRecord | None]:
    """The record kept for an item like the one at index: its own index's
    first, else one kept at another index (equal items are interchangeable)."""
    if not found:
        return index, None
    at = index if index in found else min(found)
    return at, found.pop(at)
