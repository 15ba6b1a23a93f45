"""perf44's shortcut on a resume's read of its log: `locate` tells a body
step's record name (`steps/` and eight ASCII digits) inline, as
`step_number` tells it (THE test), and keeps every other name by name."""

from __future__ import annotations

from durable._storage.logentry import encode_entry, locate, step_number

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
