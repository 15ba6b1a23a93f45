"""The workflow of the item-retries experiment (`retries.py`): a `loop_over`
block whose items fail at random, with `retries=2`, on a thread or a
process pool, with or without `checkpoint_items`. Imported by the campaign
(which resumes in its own process) and run by the child it kills: the same
functions, so the same fingerprints.

Every try logs `<owner> <pid> <index> <attempt> <F|S>` with one O_APPEND
write: `owner` is the process the run was started or resumed in
(FAULT_OWNER, inherited by the pool's workers), `attempt` the try's number
as the run counts it (`current_run().attempt`; -1 in a process pool's
worker, which has no run to ask). A try fails at random: an item that gives
up fails the run, which is resumed again (with a new budget for it).

    python -c 'import sys; from tests.faults.retryflows import main; main(sys.argv[1:])' N POOL CHECKPOINT RUN_ID
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import random
import time
from typing import Any

import durable
from tests.faults import flows

FAIL = 0.3  # the chance a try fails: some items give up, and the run is resumed again


@durable.step(name="flaky_item", retries=2, retry_delay=0)
def flaky_item(i: int) -> dict[str, Any]:
    # A process pool's worker has no run to ask (-1): its tries are counted
    # by the log only.
    run = durable.current_run() if os.environ.get("FAULT_POOL") == "threads" else None
    attempt = -1 if run is None else run.attempt
    fail = random.random() < FAIL
    line = f"{os.environ['FAULT_OWNER']} {os.getpid()} {i} {attempt} {'F' if fail else 'S'}\n"
    fd = os.open(os.environ["FAULT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    until = time.perf_counter() + float(os.environ.get("FAULT_SPIN", "0.002"))
    while time.perf_counter() < until:  # kills land inside bodies too
        pass
    if fail:
        raise ValueError(f"item {i} try {attempt} failed")
    return flows.value(i)


def pool(kind: str) -> cf.Executor:
    if kind == "threads":
        return cf.ThreadPoolExecutor(3)
    # fork: the workers inherit FAULT_OWNER (forkserver, spawn would not)
    return cf.ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("fork"))


@durable.workflow(name="retry_items")
def retry_items(n: int, kind: str, checkpoint: bool) -> list[Any]:
    with pool(kind) as executor:
        return durable.loop_over(flaky_item, range(n), executor=executor, checkpoint_items=checkpoint)


def call(n: int, kind: str, checkpoint: bool, run_id: str, store: durable.Store) -> Any:
    return retry_items.with_options(store=store, run_id=run_id)(n, kind, checkpoint)


def main(argv: list[str]) -> None:
    n, kind, checkpoint, run_id = int(argv[0]), argv[1], argv[2] == "1", argv[3]
    os.environ["FAULT_POOL"] = kind
    os.environ["FAULT_OWNER"] = str(os.getpid())
    store = flows.open_store()
    print("STARTED", flush=True)
    print("VALUE", json.dumps(call(n, kind, checkpoint, run_id, store)), flush=True)


CHILD = "import sys; from tests.faults.retryflows import main; main(sys.argv[1:])"
