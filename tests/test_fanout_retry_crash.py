"""The retry budget of a step across a `kill -9` of its workflow's process:
a plain step keeps it (each failed try is recorded), and so does a
`loop_over` item, wherever its tries run (here, on a thread or process
pool, as coroutines): the workflow process keeps each failed try before the
next starts (`_fanout.tries`). Found by the faults7 campaign: an item's
tries left no record, and after the crash it started a full budget again
(6 bodies entered where a plain step enters 4)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import asyncio, concurrent.futures as cf, os, signal, sys
    import durable

    TRIES, STORE, KIND = sys.argv[1], sys.argv[2], sys.argv[3]
    os.environ["WORKFLOW_PID"] = str(os.getpid())  # a pool's worker kills the workflow

    def tried() -> int:
        with open(TRIES, "a") as f:
            f.write("x\\n")
        with open(TRIES) as f:
            n = len(f.read().split())
        if n == 3 and os.environ.get("KILL"):  # before the third try does anything
            os.kill(int(os.environ["WORKFLOW_PID"]), signal.SIGKILL)
        return n

    @durable.step(name="flaky", retries=2, retry_delay=0)
    def flaky(x: int) -> int:
        raise ValueError(f"try {tried()}")

    @durable.step(name="aflaky", retries=2, retry_delay=0)
    async def aflaky(x: int) -> int:
        raise ValueError(f"try {tried()}")

    def pool():
        if KIND == "threads":
            return cf.ThreadPoolExecutor(2)
        return cf.ProcessPoolExecutor(2) if KIND == "processes" else None

    @durable.workflow(name="items")
    def items() -> list[int]:
        return durable.loop_over(flaky, [1], executor=pool())

    @durable.workflow(name="plain")
    def plain() -> int:
        return flaky(1)

    @durable.workflow(name="coroutines")
    async def coroutines() -> list[int]:
        return await durable.loop_over(aflaky, [1])

    flow = {"plain": plain, "coroutines": coroutines}.get(KIND, items)
    if __name__ == "__main__":
        try:
            done = flow.with_options(store=STORE, run_id="r")()
            if KIND == "coroutines":
                asyncio.run(done)
        except ValueError as e:
            print("failed:", e)
    """
)


@pytest.mark.parametrize("kind", ["plain", "items", "threads", "processes", "coroutines"])
def test_a_kill_9_between_tries_keeps_the_retry_budget(
    tmp_path: Path, child_env: dict[str, str], kind: str
) -> None:
    script, tries, store = tmp_path / "flow.py", tmp_path / "tries", tmp_path / "store"
    script.write_text(SCRIPT)
    args = [sys.executable, str(script), str(tries), str(store), kind]
    # In a session of its own: the idle workers of its process pool outlive
    # it (nothing tells them), and are killed with its group once it died.
    killed = subprocess.Popen(
        args, env={**child_env, "KILL": "1"}, cwd=tmp_path, start_new_session=True
    )
    try:
        assert killed.wait(timeout=120) == -9
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(killed.pid, signal.SIGKILL)
    resumed = subprocess.run(
        args, env=child_env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert resumed.stdout.strip() == "failed: try 4", resumed.stderr
    # Two failed tries recorded, one killed: the resume makes the third and last.
    assert len(tries.read_text().split()) == 4
