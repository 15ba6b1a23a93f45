"""A cached step whose body reads its run (`durable.current_run()`: the run
id, the idempotency key, the attempt) may return a value made of it, which
its key (code and arguments) does not hold: another run must never be
served it. Such a call is not cached, with a warning; a step that does not
read its run is shared across runs as before."""

from __future__ import annotations

import pytest

import durable
from durable.testing import memory_store


def test_a_cached_step_that_reads_its_run_is_not_served_to_another_run() -> None:
    store = memory_store()
    made: list[str] = []

    @durable.step(cache=True)
    def report(day: str) -> str:
        run = durable.current_run()
        made.append(day)
        return f"{run.run_id if run else 'plain'}/{day}.csv"

    @durable.workflow(store=store, name="reports")
    def reports(day: str) -> str:
        return report(day)

    with pytest.warns(UserWarning, match=r"report .*durable\.current_run\(\).* not cached"):
        assert reports.with_options(run_id="A")("mon") == "A/mon.csv"
    with pytest.warns(UserWarning, match="not cached"):
        assert reports.with_options(run_id="B")("mon") == "B/mon.csv"
    assert made == ["mon", "mon"]
    assert reports.with_options(run_id="A")("mon") == "A/mon.csv"  # the run's record replays
    assert made == ["mon", "mon"]


def test_a_loop_item_or_an_inner_step_reading_the_run_keeps_nothing() -> None:
    store = memory_store()
    made: list[str] = []

    @durable.step
    def key() -> str:  # not cached itself: read in the cached step's body
        run = durable.current_run()
        assert run is not None
        return run.idempotency_key()

    @durable.step(cache=True)
    def charge(amount: int) -> str:
        made.append(f"charge {amount}")
        return key()

    @durable.step(cache=True)
    def label(n: int) -> str:
        made.append(f"label {n}")
        return f"{n}"  # reads nothing of the run: shared by both runs

    @durable.workflow(store=store, name="orders")
    def orders() -> list[str]:
        return [*durable.loop_over(charge, [5]), charge(7), label(1)]

    with pytest.warns(UserWarning, match="not cached"):
        first = orders.with_options(run_id="A")()
    with pytest.warns(UserWarning, match="not cached"):
        second = orders.with_options(run_id="B")()
    assert [k.split(":")[0] for k in first[:2] + second[:2]] == ["A", "A", "B", "B"]
    assert made == ["charge 5", "charge 7", "label 1", "charge 5", "charge 7"]
