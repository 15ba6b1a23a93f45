"""Two runs of one factory-made workflow at once, each loading its own
contents into the list the step holds (`items[:] = config`): run b's body
waits while run a is called again in another thread, then b's cached step
runs as a `loop_over` item on a thread pool. The pool's thread has no run
set and reads the snapshot the last run of the process took
(`madewith.held_snapshot`: a's, [1]) for the fingerprint; the cache key
still counts what the step's closure holds now as arguments do
(`cachekey.state_values`), so b's entry is keyed by [2] and a later run
loading [1] computes 11, not b's 12. A guard: no stale value here."""

from __future__ import annotations

import concurrent.futures as cf
import threading
from pathlib import Path
from typing import Any

import durable


def test_a_pool_item_reads_held_contents_for_its_own_run(tmp_path: Path) -> None:
    durable.configure(store=str(tmp_path / "store"))
    runs: list[int] = []

    def mk(items: list[int]) -> Any:
        @durable.step(cache=True)
        def s(x: int) -> int:
            runs.append(x)
            return sum(items) + x

        return s

    items: list[int] = []
    step = mk(items)
    ready, go = threading.Event(), threading.Event()

    @durable.workflow
    def wf(x: int, wait: bool = False) -> list[int]:
        if wait:
            ready.set()
            go.wait(30)
        with cf.ThreadPoolExecutor(1) as pool:
            return durable.loop_over(step, [x], executor=pool)

    items[:] = [1]
    assert wf.with_options(run_id="a")(0) == [1]  # computed: the entry for [1], 0
    items[:] = [2]
    with cf.ThreadPoolExecutor(1) as other:
        b = other.submit(wf.with_options(run_id="b"), 10, True)
        assert ready.wait(30)
        assert wf.with_options(run_id="a")(0) == [1]  # a called again, with a's own contents
        go.set()
        assert b.result(60) == [12]
    items[:] = [1]
    assert wf.with_options(run_id="c")(10) == [11]  # not b's output, made with [2]
    assert runs == [0, 10, 10]
