"""A retry is numbered in the run, the same for a step and for a
`loop_over` item: after a resume whose earlier attempt used up a budget,
the try that fails is the run's third, as history and `current_run().attempt`
count it, not the first of the new budget."""

from __future__ import annotations

import pytest

import durable
from durable import events

FAILS = 3  # the first attempt's two tries (its budget) and the resume's first


def _retried(seen: list[events.Event]) -> list[int]:
    return [e.attempt for e in seen if isinstance(e, events.StepRetried)]


@pytest.mark.parametrize("where", ["step", "item"])
def test_a_retry_after_a_resume_is_numbered_in_the_run(store: durable.Store, where: str) -> None:
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
    with durable.on_event(seen.append):
        assert wf.resume(f"r-{where}").value == [7]
    assert tries == [0, 1, 2, 3]  # each try once, numbered in the run
    assert _retried(seen) == [2]  # the resume's failed try: the run's third (0-based 2)
