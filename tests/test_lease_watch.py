"""Taking over an object-store lease that looks expired, held by a process
on another host: the contender watches it stay unrenewed for two thirds of
the time it was held for plus a margin (23 s for the 30 s default) before
taking it over, since that host's clock may differ from ours and a live
holder can look expired. That wait is needed, but it was a silent
`time.sleep` inside the store: an async workflow froze its event loop for
23 s, and nobody was told what the call waited for."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from typing import Any

import pytest

import durable

HELD = 1.5  # the planted holder held its lease this long: a watch of 1.15 s
WATCH = HELD * 2 / 3 + HELD / 10


def _plant(url: str, gen: int, expires: float, token: str = "t") -> None:
    owner = {"host": "elsewhere", "pid": 4242, "token": token, "since": expires - HELD,
             "expires": expires}  # fmt: skip
    durable.open_store(url).put(f"w/r/lease/{gen:010d}", json.dumps(owner).encode())


def _flow(url: str, ran: list[str]) -> Any:
    @durable.step
    async def work() -> int:
        ran.append("work")
        return 1

    @durable.workflow(store=durable.open_store(url), run_id="r", name="w")
    async def w() -> int:
        return await work()

    return w


def _url() -> str:
    return f"memory://watch-{time.monotonic_ns()}"


async def _ticking(job: Any) -> tuple[Any, float]:
    """(job's result, the longest the event loop went without a tick)."""
    ticks = [time.monotonic()]

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.02)
            ticks.append(time.monotonic())

    ticker = asyncio.ensure_future(tick())
    try:
        result = await job
    finally:
        ticker.cancel()
    ticks.append(time.monotonic())
    return result, max(b - a for a, b in itertools.pairwise(ticks))


def test_an_async_takeover_watches_the_expired_lease_without_blocking_its_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, ran = _url(), []
    _plant(url, 7, time.time() - 1)
    caplog.set_level(logging.INFO, logger="durable")
    started = time.monotonic()
    result, gap = asyncio.run(_ticking(_flow(url, ran)()))
    assert (result, ran) == (1, ["work"])
    assert time.monotonic() - started >= WATCH  # the watch still happens, in full
    assert gap < WATCH / 2, f"the event loop stood still for {gap:.2f} s"
    (line,) = [r for r in caplog.records if "unrenewed" in r.getMessage()]
    assert line.levelno == logging.WARNING
    text = line.getMessage()
    assert "run r" in text and "pid 4242 on elsewhere" in text and "expired" in text
    assert f"{WATCH:.1f} s" in text, text


def test_a_holder_renewing_during_the_watch_keeps_its_run() -> None:
    """The watch is what keeps a live holder whose clock runs behind ours:
    a renewal seen during it means the run is held, and nothing runs here."""
    url, ran = _url(), []
    _plant(url, 7, time.time() - 1)

    async def renew_once_watched() -> None:
        while not durable.open_store(url).list("w/r/lease/") or not _watching():
            await asyncio.sleep(0.01)
        _plant(url, 8, time.time() + 60)

    async def both() -> Any:
        renewal = asyncio.ensure_future(renew_once_watched())
        try:
            return await _flow(url, ran)()
        finally:
            await renewal

    with pytest.raises(durable.RunLockedError, match="elsewhere"):
        asyncio.run(both())
    assert ran == []


def _watching() -> bool:
    from durable._storage import objectlease

    return bool(objectlease._WATCHED)


def test_a_sync_caller_still_takes_an_expired_lease_over_after_the_watch() -> None:
    url, ran = _url(), []
    _plant(url, 7, time.time() - 1)

    @durable.step
    def work() -> int:
        ran.append("work")
        return 1

    @durable.workflow(store=durable.open_store(url), run_id="r", name="w")
    def w() -> int:
        return work()

    started = time.monotonic()
    assert w() == 1 and ran == ["work"]
    assert time.monotonic() - started >= WATCH
    # Direct acquires (durable's own tools: cancel, fork, delete) wait it out too.
    _plant(url, 20, time.time() - 1)
    started = time.monotonic()
    durable.open_store(url).acquire("w", "r", 30).release()
    assert time.monotonic() - started >= WATCH
