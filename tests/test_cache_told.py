"""Each reason a cached step ran without its cache is told once per step
and process: one reason told does not silence another (`cachewhy`)."""

from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Any

import pytest

import durable


class Elsewhere(cf.Executor):  # hands items over pickled, as to another process
    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        done: cf.Future[Any] = cf.Future()
        done.set_result(fn(*args, **kwargs))
        return done


def test_an_uncached_call_told_leaves_the_uncached_block_told_too(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path))
    ran: list[int] = []

    @durable.step(cache=True)
    def scale(x: int, guard: object = None) -> int:
        ran.append(x)
        return x * 2

    with pytest.warns(UserWarning, match="ran without its cache"):
        assert scale(1, threading.Lock()) == 2  # a lock has no digest
    with Elsewhere() as pool:
        with pytest.warns(UserWarning, match=r"runs without its cache in this loop_over"):
            assert durable.loop_over(scale, [2, 2], executor=pool) == [4, 4]
    assert durable.cache_info(scale).entries == 0  # nothing was kept: the warning is the truth
