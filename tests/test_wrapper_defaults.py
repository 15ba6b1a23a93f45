"""A step under a `functools.wraps` decorator that hands its arguments on
(`*args, **kwargs`) is bound by the wrapped function's signature, but the
wrapper, not that signature's default, may fill a parameter the call leaves
out (`kwargs.setdefault("scale", 2)`). So a parameter left out and one given
its default value are two calls: never one call's recorded or cached output
returned for the other (DESIGN §2, identity of a call: fail closed when it
cannot be established). A workflow's body is called with its defaults given,
so its run id counts them as before."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import durable


def default_scale(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("scale", 2)  # the decorator's own default, not the function's
        return fn(*args, **kwargs)

    return wrapper


def test_a_cached_call_leaving_out_what_the_wrapper_fills_is_not_the_call_giving_the_default(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(local_store.url))
    ran: list[tuple[int, int]] = []

    @durable.step(cache=True)
    @default_scale
    def work(x: int, scale: int = 1) -> int:
        ran.append((x, scale))
        return x * scale

    assert (work(3), work(3, scale=1), work(3), work(x=3, scale=1)) == (6, 3, 6, 3)
    assert ran == [(3, 2), (3, 1)]


def test_a_resumed_run_giving_the_default_runs_the_step_again(store: durable.Store) -> None:
    ran: list[tuple[int, int]] = []

    @durable.step
    @default_scale
    def work(x: int, scale: int = 1) -> int:
        ran.append((x, scale))
        return x * scale

    @durable.workflow(store=store, on_change="rerun")
    def flow(x: int, explicit: bool) -> int:
        return work(x, scale=1) if explicit else work(x)

    assert flow.with_options(run_id="r")(3, False) == 6
    assert flow.resume("r", explicit=True).value == 3
    assert ran == [(3, 2), (3, 1)]


def test_a_workflow_under_a_wrapper_filling_a_default_runs_with_the_wrappers_default(
    store: durable.Store,
) -> None:
    # Its body was called with the wrapped function's defaults given, and
    # the wrapper's setdefault then failed: "multiple values for 'scale'".
    ran: list[int] = []

    @durable.step
    def double(x: int) -> int:
        ran.append(x)
        return 2 * x

    @durable.workflow(store=store, on_change="rerun")
    @default_scale
    def flow(x: int, scale: int = 1) -> int:
        return double(x) * scale

    assert (flow(3), flow(3), flow(x=3)) == (12, 12, 12)
    assert flow(3, scale=1) == 6  # another call, another run
    assert flow.with_options(run_id="r")(4) == 16
    assert flow.resume("r", scale=5).value == 40
    assert ran == [3, 3, 4]
