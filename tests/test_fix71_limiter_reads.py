"""What calling a client's method reads of the client when it waits on a
rate limiter it holds (`methoduses._reads_nothing`), in process: an async
client's `await self.limiter.acquire()` reads nothing of it, as the sync
`self.limiter.wait()` does (test_fix71_users); handed back, or handed
something of the caller's, the limiter is read."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from durable._fingerprint.methoduses import method_uses

LIMITER = """import asyncio, time
class Limiter:
    def __init__(self, per_sec):
        self.gap, self.last = 1.0 / per_sec, 0.0
    async def acquire(self, n=1):
        now = time.monotonic()
        self.last = max(now, self.last + self.gap * n)
        await asyncio.sleep(min(self.last - now, 0.001))
        return self.gap
class Client:
    def __init__(self):
        self.limiter, self.n = Limiter(1000), 1
    async def complete(self, prompt):
        {call}
        return prompt.upper()
CLIENT = Client()
"""
CALLS = {  # the client's call of its limiter: whether the client's method reads `limiter`
    "await self.limiter.acquire()": False,
    "await self.limiter.acquire(2)": False,
    "await self.limiter.acquire(self.n)": True,  # handed something of the caller's
    "prompt += str(await self.limiter.acquire())": True,  # what it hands back used
}


@pytest.mark.parametrize("call", list(CALLS))
def test_an_async_limiter_awaited_alone_reads_nothing_of_the_client(tmp_path: Path, call: str) -> None:
    name = f"f71lim_{list(CALLS).index(call)}"
    (tmp_path / f"{name}.py").write_text(LIMITER.replace("{call}", call))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module(name)
        uses = method_uses(mod.Client, "complete", set(), mod.CLIENT)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)  # no module of the user's left for later tests to find
    assert uses is not None
    assert ("limiter" in uses[1]) is CALLS[call], uses
