"""The 37th new-user walk, through the Python API: options refused where
they are given, with messages that name what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

import durable


@pytest.mark.parametrize("given", [5, ["a"], b"a", True, "a/b", ""])
def test_a_run_id_option_that_is_no_run_id_is_refused_where_it_is_given(given: Any) -> None:
    """Before: `@durable.workflow(run_id=5)` (or `with_options(run_id="a/b")`)
    was taken, and refused only at the workflow's first call, far from the
    line that gave it."""
    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        durable.workflow(run_id=given)(lambda: 1)
    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        durable.workflow(lambda: 1).with_options(run_id=given)
    assert durable.workflow(run_id=lambda: "r1")(lambda: 1).options.run_id() == "r1"


@pytest.mark.parametrize(("given", "told"), [(".hidden", "start with '.'"), ("a\\b", "'\\'")])
def test_a_run_id_refused_for_a_rule_the_message_did_not_state_names_it(
    given: str, told: str, store: durable.Store
) -> None:
    """Before: `.hidden` and `a\\b` were refused as run ids with a message
    listing '/', '..', whitespace, control and glob characters: neither
    rule they broke."""
    wf = durable.workflow(store=store)(lambda: 1)
    with pytest.raises(durable.ConfigurationError) as e:
        wf.with_options(run_id=given)()
    assert told in str(e.value)


def test_an_awaitable_left_unawaited_in_a_sync_workflow_says_to_await_it(
    store: durable.Store,
) -> None:
    """Before: a sync workflow returning `durable.loop_over(fetch, items)`
    of an async `fetch` (or an async step's call) failed with "cannot pickle
    'coroutine' object. Return plain data": not the missing `await`, in a
    workflow that must be `async def` to give it. The items never ran."""
    import gc
    import warnings

    ran: list[int] = []

    async def fetch(i: int) -> int:
        ran.append(i)
        return i

    @durable.workflow(store=store, run_id="sync")
    def gather(n: int) -> list[int]:
        return durable.loop_over(fetch, list(range(n)))  # type: ignore[return-value]

    with warnings.catch_warnings():  # the coroutine's own "never awaited"
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(durable.SerializationError) as e:
            gather(2)
        gc.collect()
    assert "it holds a coroutine, which is never run unless awaited: make the workflow " \
        "`async def` and `await` it" in str(e.value)  # fmt: skip
    assert ran == [] and gather.runs()[0].status == "failed"
