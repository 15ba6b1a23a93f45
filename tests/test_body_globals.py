"""A global of the workflow's module (or an attribute of one of its classes)
that the body fills from a run argument computes, for the module's steps
that read it, as that argument would: a resume given another value for it
is a changed call, never a replay of the output computed from the old one."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import durable
from tests.test_closure_arguments import refused_on_resume

SETTINGS: dict[str, Any] = {}
SEEN: list[str] = []


@durable.step
def scaled_sum(xs: list[int]) -> int:
    """A module's step reading a global that the workflow body fills."""
    SEEN.append("scaled_sum")
    return int(sum(xs) * SETTINGS["scale"])


def test_a_global_the_body_fills_from_an_argument(store: durable.Store) -> None:
    SEEN.clear()

    @durable.workflow(run_id="r6", store=store)
    def report(scale: float, ready: bool = False) -> int:
        SETTINGS["scale"] = scale
        out: int = scaled_sum([1, 2, 3])
        if not ready:
            durable.suspend("waiting")
        return out

    refused_on_resume(report, "r6", 2.0, scale=10.0)  # was: 12, running gives 60
    assert SEEN == ["scaled_sum"]
    assert report.resume("r6", scale=2.0, ready=True).value == 12  # the same scale: replayed
    assert SEEN == ["scaled_sum"]


def test_a_global_the_body_fills_from_no_argument_changes_nothing(store: durable.Store) -> None:
    SEEN.clear()

    @durable.workflow(run_id="r7", store=store)
    def report(scale: float, ready: bool = False) -> int:
        SETTINGS["scale"] = 2  # the same on every call
        out: int = scaled_sum([1, 2, 3])
        if not ready:
            durable.suspend("waiting")
        return out + int(scale)

    with pytest.raises(durable.Suspended):
        report(1.0)
    assert report.resume("r7", scale=5.0, ready=True).value == 17
    assert SEEN == ["scaled_sum"]


class Rates:
    rates: ClassVar[dict[str, int]] = {"k": 1}


@durable.step
def priced(n: int) -> int:
    """A module's step reading a class attribute the body sets (a dict: a
    number there counts by value in its fingerprint)."""
    SEEN.append("priced")
    return n * Rates.rates["k"]


def test_a_class_attribute_the_body_sets_from_an_argument(store: durable.Store) -> None:
    SEEN.clear()

    @durable.workflow(run_id="r10", store=store)
    def report(k: int, ready: bool = False) -> int:
        Rates.rates = {"k": k}
        print(k)  # a builtin it passes the argument to: no global filled
        out: int = priced(10)
        if not ready:
            durable.suspend("waiting")
        return out

    try:
        refused_on_resume(report, "r10", 2, k=3)  # was: 20, running gives 30
        assert SEEN == ["priced"]
    finally:
        Rates.rates = {"k": 1}
