"""No try of a `loop_over` item starts once the run was refused (a cancel
taken, the lease lost): `KeptTries.again` looks at the run's refusal before
another try, not only at the cancel marker when its poll is due. Before,
an async block whose other worker had taken the cancel retried the failing
item (its look at the marker not due yet), and a lost lease was refused
only because the failed try's record write failed first."""

from __future__ import annotations

import asyncio

import pytest

import durable


def test_an_async_item_is_not_tried_again_once_another_worker_took_the_cancel(
    store: durable.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Looks at the marker at most once a second: the second worker's look
    # comes well within a second of the first worker's.
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "1")
    tries: list[int] = []
    cancelled = asyncio.Event()

    @durable.step(retries=3, retry_delay=0)
    async def work(i: int) -> int:
        tries.append(i)
        if i == 0:
            await cancelled.wait()  # set as item 1 returns; its worker then looks
            raise ConnectionError("flaky")
        assert flow.cancel("c").status == "cancelling"
        await asyncio.sleep(1.05)  # past the look's interval since the run began
        cancelled.set()
        return i

    @durable.workflow(store=store, run_id="c")
    async def flow() -> list[int]:
        return await durable.loop_over(work, [0, 1], max_concurrency=2)

    with pytest.raises(durable.Cancelled):
        asyncio.run(flow())
    assert sorted(tries) == [0, 1]  # item 0 tried once: the run was cancelled before its retry
    assert flow.runs()[0].status == "cancelled"


def test_a_durable_usage_error_in_a_step_is_not_tried_again(store: durable.Store) -> None:
    """A `ConfigurationError` raised by durable in a step's body (a
    `wait_for` there, an option of the wrong type) says the same on every
    try: each retry ran the body's side effects again for nothing."""
    sent: list[str] = []

    @durable.step(retries=2, retry_delay=0)
    def ask(to: str) -> object:
        sent.append(to)  # an email, before the mistake
        return durable.wait_for("answer")  # only in a workflow body

    @durable.workflow(store=store, run_id="asked")
    def asking() -> list[object]:
        return [ask("ann"), *durable.loop_over(ask, ["bob"])]

    with pytest.raises(durable.ConfigurationError, match="wait_for"):
        asking()
    assert sent == ["ann"]
    sent.clear()
    with pytest.raises(durable.ConfigurationError, match="wait_for"):
        durable.loop_over(ask, ["bob"])  # a plain block: its item's retries too
    assert sent == ["bob"]
