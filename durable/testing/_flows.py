"""The workflow the store conformance suite runs on a store under test: five
counted steps (each execution appends its index to a log file), the third
of which can be made to stop the run: interrupted in this process, or
blocked until the parent kills the process."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

from .._api.decorate import workflow
from .._api.step import step

STEPS = 5
GATED = 2  # the step a gate file stops


@step(name="conformance-work")
def work(i: int, log: str, gate: str) -> dict[str, int]:
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"{i}\n")
    if i == GATED:
        _gate(gate)
    return {"i": i, "sq": i * i}


def _gate(gate: str) -> None:
    """What the gate file says: "interrupt" raises KeyboardInterrupt (as
    Ctrl-C would); "block" tells the parent and waits to be killed."""
    try:
        what = Path(gate).read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    if what == "interrupt":
        raise KeyboardInterrupt
    print(json.dumps({"blocked": True}), flush=True)
    threading.Event().wait()


@workflow(name="conformance")
def flow(log: str, gate: str) -> list[dict[str, int]]:
    return [work(i, log, gate) for i in range(STEPS)]


def executions(log: Path) -> Counter[int]:
    """How many times each step ran, from the log file."""
    if not log.exists():
        return Counter()
    return Counter(int(line) for line in log.read_text(encoding="utf-8").split())


EXPECTED = [{"i": i, "sq": i * i} for i in range(STEPS)]
