"""One process, one run id, two callers at once: two threads, or two
asyncio tasks gathered in one event loop (one thread: a lease keyed by
thread would let both in), on a local folder and on memory://, with and
without `wait=`. The callers start together (a barrier) and the run's
second step waits until the other caller is out (RunLockedError) or
waiting for the lease (its `RunWaiting` event).

What must hold: never two executions of one step; without `wait=` one
caller gets RunLockedError saying that the holder is this very process and
the other the right value; with `wait=` both get the right value, the
second by replaying what the first recorded."""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import durable
from durable import events
from tests.faults.common import Outcome

N = 4


class Flows:
    """A sync and an async workflow of N steps counting their executions;
    step 1 waits until `both` is set (the other caller is out or waiting)."""

    def __init__(self) -> None:
        self.ran: Counter[int] = Counter()
        self.lock = threading.Lock()
        self.both = threading.Event()

        @durable.step(name="same_step")
        def step(i: int) -> int:
            self._note(i)
            return i * i

        @durable.step(name="same_astep")
        async def astep(i: int) -> int:
            self._note(i)
            if i == 1:
                while not self.both.is_set():  # the other task's turn
                    await asyncio.sleep(0.001)
            return i * i

        @durable.workflow(name="same_flow")
        def flow(n: int) -> int:
            return sum(step(i) for i in range(n))

        @durable.workflow(name="same_aflow")
        async def aflow(n: int) -> int:
            return sum([await astep(i) for i in range(n)])

        self.flow, self.aflow = flow, aflow

    def _note(self, i: int) -> None:
        with self.lock:
            self.ran[i] += 1
        if i == 1 and threading.current_thread() is not threading.main_thread():
            self.both.wait(60)

    def seen(self, event: events.Event) -> None:
        if isinstance(event, events.RunWaiting):
            self.both.set()


def same_run_at_once(folder: Path, trials: int, rng: random.Random) -> Outcome:
    outcome = Outcome("one run id, two callers in one process")
    flows = Flows()
    for t in range(trials):
        where = str(folder / "store") if t % 2 else f"memory://same-{uuid.uuid4().hex[:8]}"
        wait, tasks = rng.choice([None, 30.0]), rng.random() < 0.5
        trial = f"{'tasks' if tasks else 'threads'} on {where}, wait={wait}"
        flows.ran.clear()
        flows.both.clear()
        outcome.trials += 1
        options = {"store": durable.open_store(where), "run_id": f"same-{t}", "wait": wait}
        with durable.on_event(flows.seen):
            got = _tasks(flows, options) if tasks else _threads(flows, options)
        _check(outcome, trial, got, flows.ran, wait)
    return outcome


def _threads(flows: Flows, options: dict[str, Any]) -> list[Any]:
    barrier = threading.Barrier(2)
    got: list[Any] = []

    def call() -> None:
        barrier.wait()
        try:
            got.append(flows.flow.with_options(**options)(N))
        except Exception as e:
            got.append(e)
        finally:
            flows.both.set()  # one is out: the other's step need not wait

    callers = [threading.Thread(target=call) for _ in range(2)]
    for c in callers:
        c.start()
    for c in callers:
        c.join(60)
    return got


def _tasks(flows: Flows, options: dict[str, Any]) -> list[Any]:
    async def call() -> Any:
        try:
            return await flows.aflow.with_options(**options)(N)
        finally:
            flows.both.set()

    async def both() -> list[Any]:
        return list(await asyncio.gather(call(), call(), return_exceptions=True))

    return asyncio.run(both())


def _check(outcome: Outcome, trial: str, got: list[Any], ran: Counter[int], wait: float | None) -> None:
    right = sum(i * i for i in range(N))
    if any(count != 1 for count in ran.values()) or sorted(ran) != list(range(N)):
        outcome.violation(trial, f"executions {dict(ran)}")
    values = [g for g in got if g == right]
    locked = [g for g in got if isinstance(g, durable.RunLockedError)]
    outcome.endings["both values" if len(values) == 2 else "value and RunLockedError"] += 1
    if wait is not None and len(values) != 2:
        outcome.violation(trial, f"with wait= the callers got {got!r}")
    if wait is None and (len(values), len(locked)) != (1, 1):
        outcome.violation(trial, f"the callers got {got!r}")
    if locked and "this very process" not in str(locked[0]):
        outcome.violation(trial, f"RunLockedError does not say who holds the run: {locked[0]}")
