"""review51: hunt49 made a `durable.SerializationError` never retried, as a
`ConfigurationError` and a `DefinitionChangedError` are (`RetryPolicy.again`),
also when `retry_on=` names it: a step declared
`retry_on=(durable.SerializationError,)` was accepted, looked retried and
made one try. A `BaseException` named there is refused for that very reason
(listed, it looked retried and was not): so is a durable error never retried
now, at the decorator, saying why."""

from __future__ import annotations

from typing import Any

import pytest

import durable
from durable.testing import memory_store


class _Unrecordable(durable.SerializationError):
    """A user's subclass: never retried either (`isinstance`)."""


@pytest.mark.parametrize(
    "named",
    [
        durable.SerializationError,
        (ConnectionError, durable.SerializationError),
        [durable.ConfigurationError],
        {durable.DefinitionChangedError},
        _Unrecordable,
    ],
)
def test_a_never_retried_error_named_in_retry_on_is_refused(named: Any) -> None:
    def body() -> int:
        return 1

    with pytest.raises(durable.ConfigurationError, match="is never retried") as e:
        durable.step(name="s", retries=2, retry_on=named)(body)  # was: accepted, one try made
    assert "retry_on" in str(e.value)


def test_a_class_above_them_is_kept_and_still_does_not_retry_them() -> None:
    """`DurableError` or `Exception` names other errors too (a `StorageError`):
    kept; the durable errors under them are still never retried."""
    tries: list[int] = []

    @durable.step(name="out", retries=2, retry_delay=0, retry_on=(durable.DurableError,))
    def out() -> int:
        tries.append(1)
        raise durable.SerializationError("out", "object", "no")

    @durable.workflow(name="w", run_id="w")
    def flow() -> int:
        return out()

    with pytest.raises(durable.SerializationError):
        flow.with_options(store=memory_store())()
    assert tries == [1]
