"""A resumed run log's index, compacted: a body step's record kept by its
position in an array of spans instead of by its name in a dict.

`log.RunLog` keeps name -> span (`logentry.span`) for every record of its
log, so that an append stays create-only in O(1). A resume reads the whole
log, and most names are a body step's record, `steps/00000042`: as a name
string, an int and a dict slot each costs about 120 bytes a record, here 8.
Only the one spelling of a position (`keys.record_name`: eight ASCII
digits) is compacted, so the mapping stays exact; every other name stays in
the dict. The dict is asked first: a record written after the compaction is
there. Anything that deletes or replaces records, or applies another
writer's appends, first puts the array back into the dict (`expand`): rare
(a rerun, a rebase, an item checkpoint of another process), and then exact
by construction."""

from __future__ import annotations

from array import array

from .keys import Position, record_name
from .logentry import data_of, step_number

_STEPS = "steps/"
_SPAN_MAX = 2**64  # a span past 4 GiB into the log does not fit: kept by name
# Positions without a record cost 8 bytes each: past this many gaps a log
# (timers only, hand-made names) keeps its names in the dict.
_GAPS = 256


def no_steps() -> array[int]:
    return array("Q")


def position_of(name: str) -> int:
    """The body position `name` is THE record name of, or -1."""
    return step_number(name.encode("utf-8", "surrogatepass"))


def compact(named: dict[str, int], found: dict[int, int]) -> tuple[dict[str, int], array[int]]:
    """(the names kept by name, the spans of body steps by position): the
    same mapping as `named` and `found` (position -> span, as `locate`
    sorts a log's names) together. A span is never 0 (an entry's data
    follows its header), so 0 marks a position without a record."""
    if found and max(found.values()) >= _SPAN_MAX:  # past 4 GiB: kept by name
        for n in [n for n, at in found.items() if at >= _SPAN_MAX]:
            named[record_name(n)] = found.pop(n)
    top = max(found, default=-1)
    if not found or top + 1 > len(found) + _GAPS:
        named.update({record_name(n): at for n, at in found.items()})
        return named, no_steps()
    if top + 1 == len(found):  # every position: most logs
        return named, array("Q", map(found.__getitem__, range(top + 1)))
    steps = array("Q", bytes(8 * (top + 1)))
    for n, at in found.items():
        steps[n] = at
    return named, steps


def span_of(steps: array[int], name: str) -> int | None:
    """The span the array keeps for name, None when it keeps none."""
    n = position_of(name)
    at = steps[n] if 0 <= n < len(steps) else 0
    return at or None


def expand(index: dict[str, int], steps: array[int]) -> array[int]:
    """Put the array's spans back into index, where a name written since
    (kept in index) stays as it is; the empty array that replaces steps."""
    for n, at in enumerate(steps):
        if at:
            index.setdefault(f"{_STEPS}{n:08d}", at)
    return no_steps()


def by_position(
    blob: bytes, steps: array[int], into: dict[Position, bytes], named: dict[str, int]
) -> dict[str, int]:
    """Put the records the array keeps into `into` by position, read out
    of blob (the log from byte 0): a resume's body steps, without their
    names spelled out and parsed back into positions. The index of the
    others (named) is returned, to be read out by name."""
    into.update(data_of(blob, enumerate(steps)))
    return named
