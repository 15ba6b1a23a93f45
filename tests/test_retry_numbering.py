"""A retry is numbered in the run, the same for a step and for a
`loop_over` item: after a resume whose earlier attempt used up a budget,
the try that fails is the run's third, as history and `current_run().attempt`
count it, not the first of the new budget. What a user reads says both:
the try of the call's budget first (`try 1 of 2`: "try 3" alone, with
`retries=1`, read as a budget overrun), then the run's; `durable show`
counts each attempt's tries beside the run's (`4 (2+2)`)."""

from __future__ import annotations

import logging

import pytest

import durable
from durable import events
from durable._cli.format import tries_cell

FAILS = 3  # the first attempt's two tries (its budget) and the resume's first


def _retried(seen: list[events.Event]) -> list[int]:
    return [e.attempt for e in seen if isinstance(e, events.StepRetried)]


@pytest.mark.parametrize("where", ["step", "item"])
def test_a_retry_after_a_resume_is_numbered_in_the_run(
    store: durable.Store, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    tries: list[int] = []  # current_run().attempt of each try, in order

    @durable.step(retries=1, retry_delay=0)
    def flaky(i: int) -> int:
        run = durable.current_run()
        assert run is not None
        tries.append(run.attempt)
        if len(tries) <= FAILS:
            raise ConnectionError(f"try {len(tries)}")
        return i

    @durable.workflow(store=store, run_id=f"r-{where}")
    def wf() -> list[int]:
        if where == "step":
            return [flaky(7)]
        return durable.loop_over(flaky, [7], name="items")

    with pytest.raises(ConnectionError):
        wf()
    seen: list[events.Event] = []
    caplog.clear()  # the first call's "try 1 of 2"
    with durable.on_event(seen.append), caplog.at_level(logging.WARNING, logger="durable"):
        assert wf.resume(f"r-{where}").value == [7]
    assert tries == [0, 1, 2, 3]  # each try once, numbered in the run
    assert _retried(seen) == [2]  # the resume's failed try: the run's third (0-based 2)
    budget = [(e.call_attempt, e.max_attempts) for e in seen if isinstance(e, events.StepRetried)]
    assert budget == [(0, 2)]  # and the first of its call's two
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [m.split(" failed on ")[1].split(" (")[0] for m in said] == ["try 1 of 2, try 3 of the run"]
    if where == "step":  # `durable show`'s TRIES: each attempt's, beside the run's
        (step,) = [s for s in wf.history("r-step") if s.kind == "step"]
        assert tries_cell(wf.runs()[0], step) == "4 (2+2)"
