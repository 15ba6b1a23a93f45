"""`@step(validate=fn)`: the output is checked before it is recorded; a
false result or an exception fails the attempt (retries apply) and nothing
is recorded."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

import durable
from durable.testing import FakeClock


def _complete(out: dict[str, str]) -> bool:
    return out.get("status") == "ok"


def test_a_rejected_output_is_retried_and_only_the_accepted_one_recorded(
    store: durable.Store, clock: FakeClock
) -> None:
    ran: Counter[str] = Counter()
    outputs = iter([{"status": "partial"}, {"status": "partial"}, {"status": "ok"}])

    @durable.step(retries=3, retry_delay=0.0, validate=_complete)
    def fetch() -> dict[str, str]:
        ran["fetch"] += 1
        return next(outputs)

    @durable.workflow(store=store, run_id="v1")
    def flow() -> dict[str, str]:
        return fetch()

    assert flow() == {"status": "ok"}
    assert ran["fetch"] == 3
    (step,) = flow.history("v1")[1:]  # after the "initial" entry
    assert step.attempts == 3 and len(step.failures) == 2
    assert all(f.type == "ValidationError" for f in step.failures)
    assert flow() == {"status": "ok"} and ran["fetch"] == 3  # replayed, not re-validated


def test_when_retries_run_out_nothing_is_recorded_and_the_error_names_both(
    store: durable.Store, clock: FakeClock
) -> None:
    ran: Counter[str] = Counter()
    accept = {"now": False}

    def has_rows(out: list[int]) -> bool:
        return accept["now"] and len(out) > 0

    @durable.step(retries=1, retry_delay=0.0, validate=has_rows)
    def load() -> list[int]:
        ran["load"] += 1
        return [1, 2]

    @durable.workflow(store=store, run_id="v2")
    def flow() -> int:
        return sum(load())

    with pytest.raises(durable.ValidationError) as failed:
        flow()
    assert ran["load"] == 2  # the first try and one retry
    message = str(failed.value)
    assert ".load'" in message and "has_rows" in message and "returned False" in message
    assert failed.value.step.endswith(".load") and failed.value.validator == has_rows.__qualname__
    (info,) = flow.runs()
    assert (info.status, info.steps) == ("failed", 0)  # no output was recorded
    accept["now"] = True
    assert flow.resume("v2").value == 3
    assert ran["load"] == 3


def test_a_validator_that_raises_fails_the_attempt(store: durable.Store) -> None:
    ran: Counter[str] = Counter()

    def strict(out: int) -> bool:
        raise KeyError("missing field")

    @durable.step(validate=strict)
    def produce() -> int:
        ran["produce"] += 1
        return 7

    @durable.workflow(store=store, run_id="v3")
    def flow() -> int:
        return produce()

    with pytest.raises(durable.ValidationError, match="raised KeyError") as failed:
        flow()
    assert isinstance(failed.value.__cause__, KeyError)
    assert ran["produce"] == 1
    assert flow.history("v3")[1].status == "failed"


def test_async_steps_and_plain_calls_are_validated(store: durable.Store) -> None:
    ran: Counter[str] = Counter()

    @durable.step(validate=lambda out: out > 0)
    async def score(x: int) -> int:
        ran["score"] += 1
        return x

    @durable.workflow(store=store, run_id="v4")
    async def flow(x: int) -> int:
        return await score(x)

    with pytest.raises(durable.ValidationError):
        asyncio.run(flow(-1))
    assert asyncio.run(flow.with_options(run_id="v5")(2)) == 2
    with pytest.raises(durable.ValidationError):
        asyncio.run(score(-3))  # outside a run: nothing is recorded, still checked
    assert ran["score"] == 3


def test_a_validator_must_be_a_plain_function() -> None:
    async def not_sync(out: object) -> bool:
        return True

    with pytest.raises(durable.ConfigurationError, match="validate="):
        durable.step(validate=not_sync)
    with pytest.raises(durable.ConfigurationError, match="validate="):
        durable.step(validate="yes")  # type: ignore[arg-type]


MEASURED: Counter[str] = Counter()


def test_a_cached_output_is_served_only_when_the_validator_accepts_it(
    store: durable.Store,
) -> None:
    """The validator is no part of the cache key: an entry a laxer validator
    (or none) let in is checked before it is served, so a restarted run
    applies a stricter one (steering.md) even to a cached step."""
    ran = MEASURED  # global: a counter in the closure would be part of the cache key
    ran.clear()

    def measure(x: int) -> int:
        MEASURED["measure"] += 1
        return -x if MEASURED["measure"] == 1 else x

    lax = durable.step(cache=True, name="measure")(measure)
    strict = durable.step(cache=True, name="measure", validate=lambda out: out >= 0)(measure)
    assert lax.__durable_fingerprint__ == strict.__durable_fingerprint__  # type: ignore[attr-defined]

    @durable.workflow(store=store, run_id="measured")
    def flow(check: bool) -> int:
        return strict(1) if check else lax(1)

    assert flow(False) == -1 and ran["measure"] == 1  # cached, unchecked
    assert flow.with_options(restart=True)(True) == 1 and ran["measure"] == 2
    assert flow.with_options(restart=True)(True) == 1 and ran["measure"] == 2  # its own entry

    @durable.workflow(store=store, run_id="lax")
    def laxer() -> int:
        return lax(1)

    assert laxer() == 1 and ran["measure"] == 2  # the rejected entry was replaced
