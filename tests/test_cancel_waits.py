"""A cancel reaches a run that waits: a durable sleep, a step's retry delay
and a `loop_over` item's retries look for the marker while they wait (or
before the next try), and the run ends `cancelled` without the later work.
Each test would otherwise wait out its delay (minutes): the joins time out."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import durable
from durable.testing import fake_clock

from .clikit import child_env, counts, read_until, spawn, write_flow
from .clikit import durable as durable_cli

NAPPER = '''
import os

import durable
from durable.testing import fake_clock


def note(name):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\\n")


@durable.step
def before():
    note("before")
    print("sleeping", flush=True)
    return 1


@durable.step
def after():
    note("after")
    return 2


@durable.workflow
def napper() -> int:
    first = before()
    durable.sleep(3600)
    return first + after()
'''


def _cancel_a_sleeping_run(tmp: Path, env: dict[str, str]) -> None:
    write_flow(tmp, NAPPER)
    holder = spawn(tmp, "run", "flow.py:napper", "--run-id", "z1", env=env)
    try:
        read_until(holder.stdout, "sleeping")
        asked = durable_cli(tmp, "cancel", "z1", "--json", env=env)  # another process
        assert asked.returncode == 0, asked.stderr
        assert json.loads(asked.stdout)["status"] == "cancelling"
        assert holder.wait(timeout=60) == 4  # not an hour: the sleep looked
        assert b"was cancelled" in holder.stderr.read()  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()
    assert counts(tmp) == {"before": 1}
    shown = json.loads(durable_cli(tmp, "show", "z1", "--json", env=env).stdout)
    assert (shown["status"], shown["completedSteps"]) == ("cancelled", 1)
    again = durable_cli(tmp, "run", "flow.py:napper", "--run-id", "z1", "--resume", env=env)
    assert again.returncode == 4  # at once: no second sleep, no later step
    assert counts(tmp) == {"before": 1}


@pytest.mark.slow
def test_durable_cancel_ends_a_sleeping_run_local(tmp_path: Path) -> None:
    _cancel_a_sleeping_run(tmp_path, child_env(tmp_path))  # the default interval, 0.5 s


@pytest.mark.slow
def test_durable_cancel_ends_a_sleeping_run_s3(tmp_path: Path, s3_url: str) -> None:
    _cancel_a_sleeping_run(tmp_path, child_env(tmp_path, DURABLE_STORE=s3_url,
                                               DURABLE_CANCEL_POLL="0.2"))  # fmt: skip


def _run_in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as e:
            outcome.append(e)

    # A daemon: before the fix it waits out its delay, which the test does not.
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    return worker, outcome


def _cancelled_while_waiting(
    flow: Any, run_id: str, call: Callable[[], Any], waiting: threading.Event
) -> None:
    worker, outcome = _run_in_thread(call)
    assert waiting.wait(60)
    assert flow.cancel(run_id).status == "cancelling"
    worker.join(60)
    assert not worker.is_alive(), "the run waited out its delay"
    assert [type(e) for e in outcome] == [durable.Cancelled]
    assert flow.runs()[0].status == "cancelled"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_cancel_ends_a_retry_delay_without_the_next_try(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0.05")
    tries: list[int] = []
    failed = threading.Event()

    def fail() -> int:
        tries.append(1)
        failed.set()  # the retry delay (two minutes) follows
        raise ConnectionError("flaky")

    if kind == "sync":
        step: Any = durable.step(retries=3, retry_delay=120)(fail)

        @durable.workflow(store=local_store, run_id="r")
        def flow() -> int:
            return int(step())

        _cancelled_while_waiting(flow, "r", flow, failed)
    else:

        @durable.step(retries=3, retry_delay=120)
        async def afail() -> int:
            return fail()

        @durable.workflow(store=local_store, run_id="r")
        async def aflow() -> int:
            return await afail()

        _cancelled_while_waiting(aflow, "r", lambda: asyncio.run(aflow()), failed)
    assert len(tries) == 1  # the cancel came during the delay: no second try
    with pytest.raises(durable.Cancelled):
        flow.resume("r") if kind == "sync" else asyncio.run(aflow.resume("r"))
    assert len(tries) == 1


def test_a_cancel_ends_an_async_sleep_and_a_resume_neither_sleeps_nor_goes_on(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0.05")
    ran: list[str] = []
    asleep = threading.Event()

    @durable.step
    async def before() -> int:
        ran.append("before")
        asleep.set()
        return 1

    @durable.step
    async def after() -> int:
        ran.append("after")
        return 2

    @durable.workflow(store=local_store, run_id="s")
    async def flow() -> int:
        first = await before()
        await durable.asleep(3600)
        return first + await after()

    _cancelled_while_waiting(flow, "s", lambda: asyncio.run(flow()), asleep)
    with fake_clock() as clock, pytest.raises(durable.Cancelled):
        asyncio.run(flow.resume("s"))
    assert clock.slept == [] and ran == ["before"]


@pytest.mark.parametrize("executor", [None, "threads", "async"])
def test_a_loop_over_item_is_not_tried_again_after_a_cancel(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch, executor: str | None
) -> None:
    """The item's try saw the cancel go in, then failed: before, its
    retries were all made (the cancel looked for only between items)."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    tries: list[int] = []

    def fail(i: int) -> int:
        tries.append(i)
        assert flow.cancel("l").status == "cancelling"
        raise ConnectionError("flaky")

    step = durable.step(retries=3, retry_delay=0)(fail)

    @durable.step(retries=3, retry_delay=0)
    async def afail(i: int) -> int:
        return fail(i)

    @durable.workflow(store=store, run_id="l", name="flow")
    def flow() -> list[int]:
        if executor is None:
            return durable.loop_over(step, [0])
        with ThreadPoolExecutor(2) as pool:
            return durable.loop_over(step, [0], executor=pool)

    @durable.workflow(store=store, run_id="l", name="flow")
    async def aflow() -> list[int]:
        return await durable.loop_over(afail, [0])

    with pytest.raises(durable.Cancelled):
        flow() if executor != "async" else asyncio.run(aflow())
    assert tries == [0]
    assert flow.runs()[0].status == "cancelled"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_cancel_ends_a_loop_over_items_retry_delay(
    local_store: durable.Store, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0.05")
    tries: list[int] = []
    failed = threading.Event()

    def fail(i: int) -> int:
        tries.append(i)
        failed.set()  # the item's retry delay (two minutes) follows
        raise ConnectionError("flaky")

    step = durable.step(retries=3, retry_delay=120)(fail)

    @durable.step(retries=3, retry_delay=120)
    async def afail(i: int) -> int:
        return fail(i)

    @durable.workflow(store=local_store, run_id="d", name="flow")
    def flow() -> list[int]:
        return durable.loop_over(step, [0])

    @durable.workflow(store=local_store, run_id="d", name="flow")
    async def aflow() -> list[int]:
        return await durable.loop_over(afail, [0])

    call = flow if kind == "sync" else (lambda: asyncio.run(aflow()))
    _cancelled_while_waiting(flow, "d", call, failed)
    assert tries == [0]


class _Unanswering:
    """A key store (as in docs/storage.md) whose reads of a cancel marker
    fail the first `fails` times: an object store away for a moment."""

    def __init__(self, fails: int) -> None:
        self.data: dict[str, bytes] = {}
        self.lock, self.fails, self.looks = threading.Lock(), fails, 0

    def get(self, key: str) -> bytes | None:
        if key.endswith("/cancel"):
            self.looks += 1
            if self.looks <= self.fails:
                raise ConnectionError("the store did not answer")
        return self.data.get(key)

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put(self, key: str, data: bytes) -> None:
        self.data[key] = data

    def create(self, key: str, data: bytes) -> bool:
        with self.lock:
            if key in self.data:
                return False
            self.data[key] = data
            return True

    def list(self, prefix: str) -> list[str]:
        return [k for k in list(self.data) if k.startswith(prefix)]

    def delete(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.data.pop(k, None)


def test_a_sleep_whose_look_for_a_cancel_goes_unanswered_sleeps_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sleep never read the store: one unanswered look must not fail it."""
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0.05")
    backend = _Unanswering(fails=3)
    ran: list[str] = []

    @durable.step
    def after() -> int:
        ran.append("after")
        return 2

    @durable.workflow(store=durable.open_store(backend), run_id="u")
    def flow() -> int:
        durable.sleep(0.5)  # about ten looks, the first three unanswered
        return after()

    assert flow() == 2 and ran == ["after"]
    assert backend.looks > 3
    assert flow.runs()[0].status == "completed"
