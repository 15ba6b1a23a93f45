"""What a run's manifest says about its records: how many there are
(`operations`) and which top-level positions hold one (`finished`, as
ranges), so that a resume finding fewer refuses (`outcome.records_kept`)
rather than run the lost finished steps again. Noted when an attempt
starts (the records it found: a holder killed in it leaves that much), when
it ends, and lowered before a rerun drops records (`lower`): a rerun killed
after its drop is not taken for a loss."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._storage.keys import Position, top_level
from .._storage.manifest import read_manifest, write_manifest
from ..errors import CorruptRecordError, IntegrityError
from .context import RunState

DAMAGE = (CorruptRecordError, IntegrityError)
# Past this many ranges (a run with many gaps) only the count is kept: the
# manifest's summary stays small enough for a listing to read in one go.
RANGES_KEPT = 64


def note(extra: dict[str, Any], records: Iterable[Position], error: BaseException | None = None) -> None:
    """Note `records` as the run's in its manifest's `extra`. A record an
    attempt refused as damaged (`error`) is not one: deleting its object,
    as the refusal advises, is how to run just that operation again."""
    damaged = getattr(error, "position", None) if isinstance(error, DAMAGE) else None
    kept = [p for p in records if p != damaged]
    extra["operations"] = len(kept)
    runs = _ranges(sorted({top_level(p) for p in kept}))
    if len(runs) <= RANGES_KEPT:
        extra["finished"] = runs
    else:
        extra.pop("finished", None)


def lost(extra: Mapping[str, Any], records: Iterable[Position]) -> tuple[int, list[int]] | None:
    """(how many records were noted, the noted top-level positions that
    have none now), or None when none is missing."""
    expected = extra.get("operations")
    found = list(records)
    tops = {top_level(p) for p in found}
    runs = extra.get("finished")
    gone = [p for a, b in _valid(runs) for p in range(a, b + 1) if p not in tops]
    if not isinstance(expected, int) or (not gone and len(found) >= expected):
        return None
    return expected, gone


def lower(ctx: RunState, dropped: Iterable[Position]) -> None:
    """Before a rerun drops the records at `dropped`: the stored manifest
    notes the records left. One read and write of it, only when records go."""
    gone = set(dropped)
    manifest = read_manifest(ctx.store, ctx.workflow, ctx.run_id) if gone else None
    if manifest is None or "operations" not in manifest.extra:
        return
    note(manifest.extra, [p for p in ctx.records if p not in gone])
    write_manifest(ctx.store, manifest)


def _ranges(tops: list[int]) -> list[list[int]]:
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
