"""review51: a graceful stop (`durable.request_stop()`, SIGTERM under
`stop_on_signals()`) asked while a `loop_over` item on a pool waits its
retry delay, another item still in flight: once the delay was over, the
item made its next try anyway (hunt49's retry boundary, `KeptTries.scope`,
asks the run's refusal, cancel and lease, not the stop), though a stop
never starts another operation; the same item waited in this thread
(`_run_here`, `plan.pause`) or in a task (`apause`) ends with `Stopped`.
So did the next item, sent to the worker the failed try left free. Under
`checkpoint_items=True` (where a stop ends a block between two items:
`done`) neither starts now: the item in flight finishes and is kept, the
run stops, and the resume makes the try left and the item not started."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import durable
from durable.testing import memory_store

pytestmark = pytest.mark.slow  # the fixed run waits out item 1's bound (1 s, no CPU)

tries: list[int] = []
resumed = False
retried = threading.Event()
running = threading.Event()  # item 1 runs: in flight, never dropped as not started


@durable.step(name="item", retries=1, retry_delay=0.01, retry_on=OSError)
def item(i: int) -> int:
    tries.append(i)
    if i == 0 and not resumed:
        assert running.wait(10)
        durable.request_stop()  # asked before this try fails: its retry must not start
        raise OSError("the service is down")
    if i != 1:
        retried.set()  # a try started after the stop
    elif not retried.is_set():
        running.set()
        retried.wait(1.0)  # in flight while item 0 waits its delay (an upper bound only)
    return i * 10


@durable.workflow(name="stopretry", run_id="r")
def flow() -> list[int]:
    with ThreadPoolExecutor(2) as pool:
        return durable.loop_over(
            item, [0, 1, 2], executor=pool, max_concurrency=2, checkpoint_items=True
        )


def test_a_stop_asked_during_an_items_retry_delay_starts_no_try() -> None:
    global resumed
    tries.clear()
    resumed = False
    retried.clear()
    running.clear()
    wf = flow.with_options(store=memory_store())
    try:
        with pytest.raises(durable.Stopped):
            wf()
    finally:
        durable.clear_stop()
    # Was [0, 1, 2]: item 2 started once item 0 failed (with items [0, 1]: [0, 0, 1], item 0
    # tried again once its delay was over).
    assert sorted(tries) == [0, 1]
    assert not retried.is_set()
    tries.clear()
    resumed = True
    assert wf.resume("r").value == [0, 10, 20]
    assert sorted(tries) == [0, 2]  # item 0's try left, item 2; item 1 kept
