"""The first call of a step asks what it writes that another step reads
(`stepstate.state_written`), what it only logs in (`state_logged`) and what
its own next call reads back (`state_reread`). Each made a pass of its own
over the step's module (`_written_read`: four in all, ~67 ms for a test
module), on the event loop's thread for an async step: a lease-watch test
saw its loop stand still 0.84 s at load 15. The four are now answered by
one pass; counted here, in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint import stepstate

FLOW = """
import durable

LOG = []
SEEN = {}

@durable.step
async def work(x):
    LOG.append(x)
    SEEN[x] = len(LOG)
    return len(SEEN)

@durable.workflow(run_id="r")
async def flow():
    return await work(1) + len(LOG)
"""


def test_the_first_call_of_a_step_on_an_event_loop_makes_one_pass_over_its_module(
    load: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    passes: list[str] = []
    walk = stepstate.held_helpers  # the pass's first walk of the module, once per pass

    def counted(defs: list[Any], *rest: Any) -> Any:
        passes.append(getattr(defs[0], "name", "?") if defs else "?")
        return walk(defs, *rest)

    monkeypatch.setattr(stepstate, "held_helpers", counted)
    m = load("stale70_passes", FLOW)
    assert asyncio.run(m.flow()) == 2
    assert passes == ["work"]  # was ["work"] * 4
    fn = m.work.__durable_step__.fn
    # What the one pass found, as the four found it: the workflow reads LOG, the step fills both and reads SEEN back.
    assert (
        stepstate.state_written(fn),
        stepstate.state_logged(fn),
        stepstate.state_reread(fn),
    ) == ((), ("LOG", "SEEN"), ("LOG", "SEEN"))
    assert passes == ["work"]  # asked again: found once, by code
