"""A StopIteration raised by a step or a workflow body reaches the caller as
itself, as from the plain function (DESIGN §2: the step's exception
propagates). Thrown into durable's plans, which are generators, it came out
as `RuntimeError: generator raised StopIteration` (PEP 479) whenever a
step ran through one (retries, validate=, a cache) and for every workflow
body: a body's `except StopIteration:` around `next_page()` missed it and
the run failed, where the same body run plainly finished."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable.testing import memory_store

OPTIONS: dict[str, dict[str, Any]] = {
    "direct": {},
    "retries": {"retries": 2, "retry_delay": 0.0, "retry_on": (ValueError,)},
    "validate": {"validate": lambda page: True},
    "cache": {"cache": True},
}


def pages(counts: list[int], **options: Any) -> Callable[[int], int]:
    @durable.step(**options)
    def next_page(i: int) -> int:
        counts.append(i)
        if i >= 2:
            raise StopIteration  # the source ran out, as next() says it
        return 10 * i

    return next_page


@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_a_body_catches_the_stop_iteration_its_step_raised(tmp_path: Path, kind: str) -> None:
    counts: list[int] = []
    next_page = pages(counts, **OPTIONS[kind])

    @durable.workflow(store=durable.open_store(tmp_path / "store"), run_id="paged")
    def paged() -> list[int]:
        out = []
        for i in range(10):
            try:
                out.append(next_page(i))
            except StopIteration:
                break
        return out

    assert paged() == [0, 10] and counts == [0, 1, 2]
    assert paged() == [0, 10] and counts == [0, 1, 2]  # the completed run's value
    with pytest.raises(StopIteration):
        next_page(5)  # the plain call, for comparison


def test_a_workflow_body_raising_stop_iteration_raises_it(tmp_path: Path) -> None:
    store = memory_store()

    @durable.workflow(store=store, run_id="ended")
    def ended() -> int:
        raise StopIteration("no more")

    with pytest.raises(StopIteration, match="no more"):
        ended()
    with pytest.raises(StopIteration, match="no more"):
        ended.run()
    assert [(run.status, run.error) for run in ended.runs()] == [
        ("failed", "StopIteration: no more")
    ]


def test_a_step_retried_on_stop_iteration_gives_up_with_it(tmp_path: Path) -> None:
    counts: list[int] = []
    next_page = pages(counts, retries=1, retry_delay=0.0)

    @durable.workflow(store=memory_store(), run_id="retried")
    def retried() -> int:
        return next_page(3)

    with pytest.raises(StopIteration):
        retried()
    assert counts == [3, 3]  # retried once (StopIteration is an Exception), then given up
    failures = retried.history("retried")[-1].failures
    assert [f.type for f in failures] == ["StopIteration", "StopIteration"]
    assert [(run.error or "").split(":")[0] for run in retried.runs()] == ["StopIteration"]
