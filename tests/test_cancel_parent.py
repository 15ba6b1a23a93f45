"""A run cancelled while it is inside a child run stops there: the child's
step in flight finishes and is recorded, and no further step of the child
runs (they are the cancelled run's work too). The child ends `cancelled`
with it, so that `recover` does not run the rest of it; a restart of the
parent runs both afresh."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import durable


def test_a_parent_cancelled_inside_its_child_runs_no_further_step_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")  # look at every boundary
    store = durable.open_store(tmp_path / "store")
    ran: list[int] = []
    started, go = threading.Event(), threading.Event()

    @durable.step(name="send")
    def send(i: int) -> int:
        ran.append(i)
        if i == 1 and not go.is_set():
            started.set()
            assert go.wait(30)
        return i

    @durable.workflow(name="mailing", store=store)
    def mailing() -> list[int]:
        return [send(i) for i in range(1, 5)]

    @durable.workflow(name="campaign", store=store, run_id="C")
    def campaign() -> list[int]:
        return mailing()

    raised: list[BaseException] = []

    def run() -> None:
        try:
            campaign()
        except BaseException as e:  # handed to the test's thread
            raised.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(30)
    assert campaign.cancel("C").status == "cancelling"
    go.set()
    worker.join(30)
    assert len(raised) == 1 and isinstance(raised[0], durable.Cancelled), raised
    assert ran == [1]  # the step in flight finished; nothing more of the child ran
    assert [(i.run_id, i.status) for i in campaign.runs()] == [("C", "cancelled")]
    assert [(i.run_id, i.status) for i in mailing.runs()] == [("C.0", "cancelled")]
    assert mailing.recover() == []  # nothing to recover: the child is cancelled too
    ran.clear()
    assert campaign.with_options(restart=True)() == [1, 2, 3, 4]
    assert ran == [1, 2, 3, 4]
