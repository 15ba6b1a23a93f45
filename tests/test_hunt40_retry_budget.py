"""A resume given another `retries=` than the call's open budget was opened
with (the run interrupted between tries): the budget keeps the retries it
was opened with, recorded with its failures, as a run killed mid-budget
resumes with the tries left of it. Before, the code's new count was
counted against the tries made, with at least one try whatever was left:
a smaller one made one more try than either count allows, a larger one
refilled the budget."""

from __future__ import annotations

import pytest

import durable

tries: list[int] = []
interrupt_at: list[int] = []


def _try() -> int:
    n = len(tries)
    tries.append(n)
    if n in interrupt_at:
        raise KeyboardInterrupt  # the process stopped inside this try: it left no record
    raise ValueError(f"try {n}")


def _flow(store: durable.Store, retries: int) -> object:
    @durable.step(name="flaky", retries=retries, retry_delay=0)
    def flaky() -> int:
        return _try()

    @durable.workflow(name="w", store=store, run_id="r")
    def flow() -> int:
        return flaky()

    return flow


@pytest.mark.parametrize(("first", "then"), [(3, 1), (1, 3), (2, 0)])
def test_a_resumed_budget_keeps_the_retries_it_was_opened_with(
    store: durable.Store, first: int, then: int
) -> None:
    tries.clear()
    interrupt_at[:] = [1]  # the first try failed, the second was cut short
    with pytest.raises(KeyboardInterrupt):
        _flow(store, first)()  # type: ignore[operator]
    assert len(tries) == 2
    tries.clear()
    interrupt_at.clear()
    resumed = _flow(store, then)
    # (Python 3.10 has no exception notes: durable's is a suffix of the message there.)
    with pytest.raises(ValueError, match=f"try {first - 1}(\n|$| \\[durable: )"):
        resumed.resume("r")  # type: ignore[attr-defined]
    assert len(tries) == first  # the tries left of its budget: first + 1, one made
    # It gave up: the next call has a budget of its own, of the code's retries.
    tries.clear()
    with pytest.raises(ValueError):
        resumed.resume("r")  # type: ignore[attr-defined]
    assert len(tries) == then + 1


def _loop(store: durable.Store, retries: int) -> object:
    @durable.step(name="flaky", retries=retries, retry_delay=0)
    def flaky(i: int) -> int:
        return _try()

    @durable.workflow(name="w", store=store, run_id="r")
    def flow() -> list[int]:
        return durable.loop_over(flaky, [0])

    return flow


@pytest.mark.parametrize(("first", "then"), [(3, 1), (1, 3), (2, 0)])
def test_a_resumed_items_budget_keeps_the_retries_it_was_opened_with(
    store: durable.Store, first: int, then: int
) -> None:
    tries.clear()
    interrupt_at[:] = [1]
    with pytest.raises(KeyboardInterrupt):
        _loop(store, first)()  # type: ignore[operator]
    assert len(tries) == 2
    tries.clear()
    interrupt_at.clear()
    # (Python 3.10 has no exception notes: durable's is a suffix of the message there.)
    with pytest.raises(ValueError, match=f"try {first - 1}(\n|$| \\[durable: )"):
        _loop(store, then).resume("r")  # type: ignore[attr-defined]
    assert len(tries) == first
