"""perf44's shortcuts on a resume's read of its log: `locate` tells a body
step's record name (`steps/` and eight ASCII digits) inline, as
`step_number` tells it (THE test), and keeps every other name by name;
the records are listed in one go, and a noted position without a record
is still found (`noted.lost`)."""

from __future__ import annotations

import pytest

import durable
from durable._core.recorded import Recorded
from durable._storage.keys import Position, PositionPath
from durable._storage.logentry import encode_entry, locate, step_number
from durable._storage.noted import lost
from durable._storage.records import StepRecord

NAMES = [
    "steps/00000001",
    "steps/00000042",
    "steps/+0000007",  # int() takes it; not a body position's name
    "steps/0000_003",
    "steps/0000000",  # one digit short
    "steps/000000012",  # one too many
    "steps/0000000\u0661",  # an Arabic-Indic digit: str.isdigit takes it
    "stepsX00000005",
    "items/00000001",
    "run",
]


def test_a_logs_names_are_told_as_step_number_tells_them() -> None:
    blob = b"".join(encode_entry(name, name.encode()[::-1]) for name in NAMES)
    spans: dict[str, int] = {}
    steps: dict[int, int] = {}
    assert locate(blob, "r", spans, steps=steps) == len(blob)
    told = {name: step_number(name.encode()) for name in NAMES}
    assert sorted(steps) == sorted(n for n in told.values() if n >= 0) == [1, 42]
    assert sorted(spans) == sorted(name for name, n in told.items() if n < 0)


def test_a_position_decoded_while_the_records_are_listed_is_listed_once(
    local_store: durable.Store,
) -> None:
    """`Recorded` lists its decoded positions, then its undecoded ones: one
    decoded in between (the run reaching it) was missed by both lists."""
    records = Recorded(local_store, "r")
    records[0] = StepRecord(0, "step", "s", "fp", "d")
    records.keep_all_sealed({1: b"sealed", 2: b"sealed"})
    listed = []
    for pos in records:
        listed.append(pos)
        if pos == 0:  # as the run decodes a record (`get`): it moves from one dict to the other
            records._raw.pop(1)
            records._decoded[1] = StepRecord(1, "step", "s", "fp", "d")
    assert sorted(listed) == [0, 1, 2]  # was [0, 2]


@pytest.mark.parametrize(
    ("found", "missing"),
    [
        ([0, 1, 2, 3, 4], None),
        ([0, 1, 3, 4], (5, [2])),
        ([0, 1, PositionPath((2, 0, 1)), 3, 4], None),  # a task's record stands for its position
        ([1, 4], (5, [0, 2, 3])),
    ],
)
def test_a_noted_position_without_a_record_is_lost(
    found: list[Position], missing: tuple[int, list[int]] | None
) -> None:
    extra = {"operations": 5, "finished": [[0, 4]]}
    assert lost(extra, found) == missing
