"""review51: a graceful stop asked while an item of a `loop_over` block
without `checkpoint_items` waited out its retry delay ended the block there
with `Stopped` (the delay's pause raises it, in this thread or as the
pool's wait when nothing else is in flight), though such a block is one
unit that finishes first (docs/managing-runs.md, graceful stop): its items
already finished were kept nowhere and ran again on the resume. The delay
now goes on, the item is tried again and the block is recorded; the run
stops after it."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import durable
from durable.testing import memory_store

tries: list[int] = []
resumed = threading.Event()  # read by the step: an Event counts by its type, not its state


@durable.step(name="item", retries=1, retry_delay=0.01, retry_on=OSError)
def item(i: int) -> int:
    tries.append(i)
    if i == 1 and not resumed.is_set() and tries.count(1) == 1:
        durable.request_stop()  # asked as its first try fails: the delay follows
        raise OSError("the service is down")
    return i * 10


@durable.step(name="aitem", retries=1, retry_delay=0.01, retry_on=OSError)
async def aitem(i: int) -> int:
    return item.__wrapped__(i)  # type: ignore[attr-defined, no-any-return]


@durable.workflow(name="stopunit", run_id="r")
def here() -> list[int]:
    return durable.loop_over(item, [0, 1, 2])


@durable.workflow(name="stopunit", run_id="r")
def pooled() -> list[int]:
    with ThreadPoolExecutor(1) as pool:
        return durable.loop_over(item, [0, 1, 2], executor=pool)


@durable.workflow(name="stopunit", run_id="r")
async def tasks() -> list[int]:
    return await durable.loop_over(aitem, [0, 1, 2], max_concurrency=2)


def _call(wf: Any, resume: bool = False) -> Any:
    called = wf.resume("r") if resume else wf()
    return asyncio.run(called) if asyncio.iscoroutine(called) else called


@pytest.mark.parametrize("flow", [here, pooled, tasks], ids=["here", "pool", "task"])
def test_a_stop_during_an_items_retry_delay_lets_an_unchecked_block_finish(flow: Any) -> None:
    tries.clear()
    resumed.clear()
    wf = flow.with_options(store=memory_store())
    try:
        with pytest.raises(durable.Stopped):
            _call(wf)  # stopped once the block is recorded
    finally:
        durable.clear_stop()
    assert sorted(tries) == [0, 1, 1, 2]  # was [0, 1] (here) and [0, 1, 2]: cut short
    tries.clear()
    resumed.set()
    assert _call(wf, resume=True).value == [0, 10, 20]
    assert tries == []  # was [0, 1, 2]: items 0 (and 2) executed a second time
