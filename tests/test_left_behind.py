"""A workflow called again in the process where its last call ran (a
notebook, a test): the globals that call's body filled, which count by
their contents because the module also changes them in place
(`reset()`), hold what the body left there. That is no change of the
program: the call replays as a call in a new process does. A change made
since by anything else still counts."""

from __future__ import annotations

import pytest

import durable
from tests.test_closure_arguments import refused_on_resume

RATES: dict[str, int] = {}
SEEN: list[int] = []


def reset() -> None:
    RATES.clear()


reset()  # a module-level call changing RATES in place: it counts by its contents


def set_rate(rate: int) -> None:
    RATES["k"] = rate


@durable.step
def rated(n: int) -> int:
    SEEN.append(n)
    return n * RATES["k"] + RATES.get("extra", 0)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()
    reset()


def flow(store: durable.Store, run_id: str) -> durable.Workflow[[int], int]:
    @durable.workflow(run_id=run_id, store=store)
    def report(rate: int) -> int:
        set_rate(rate)
        return rated(10)

    return report


def test_a_second_call_in_the_same_process_replays(store: durable.Store) -> None:
    report = flow(store, "l1")
    assert report(2) == 20
    assert report(2) == 20  # was: refused, "rated: now RATES changed"
    assert report(2) == 20
    assert SEEN == [10]


def test_a_change_made_since_by_anything_else_still_counts(store: durable.Store) -> None:
    report = flow(store, "l2")
    assert report(2) == 20
    RATES["extra"] = 5  # a notebook cell: running gives 25 now
    with pytest.raises(durable.DefinitionChangedError, match="RATES"):
        report(2)
    del RATES["extra"]
    assert report(2) == 20
    assert SEEN == [10]


def test_another_argument_is_still_a_changed_call(store: durable.Store) -> None:
    @durable.workflow(run_id="l3", store=store)
    def report(rate: int, ready: bool = False) -> int:
        set_rate(rate)
        out = rated(10)
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "l3", 2, match="arguments changed", rate=3)  # running gives 30
    assert report.resume("l3", rate=2, ready=True).value == 20
    assert SEEN == [10]
