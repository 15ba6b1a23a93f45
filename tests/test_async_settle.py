"""An async workflow's run ends only once the asyncio tasks its body created
have ended: a step still running when the body returned or raised (the
others of an `asyncio.gather` that one step's exception ended, a task never
awaited) records its output while the run is open, so a resume replays it
instead of executing it again. A cancelled run cancels them: they record
nothing, and the run still ends."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import durable

GATHER_FAILS = """
import asyncio, os, sys
import durable

COUNTS = sys.argv[1]
release = asyncio.Event()


def note(name):
    fd = os.open(COUNTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (name + "\\n").encode())
    os.close(fd)


@durable.step
async def charge():
    note("charge")
    if os.environ.get("FAIL") == "1":
        await release.wait()  # still running when the body raises
    return 10


@durable.step
async def check():
    note("check")
    if os.environ.get("FAIL") == "1":
        raise ValueError("check failed")
    return 1


@durable.workflow(run_id="order")
async def order():
    try:
        a, b = await asyncio.gather(charge(), check())
    except ValueError:
        release.set()  # charge can finish only once the body has raised
        raise
    return a + b


async def main():
    try:
        print(await order())
    except ValueError as e:
        print("failed:", e)
    # The program goes on until every task has ended (charge among them).
    rest = asyncio.all_tasks() - {asyncio.current_task()}
    await asyncio.gather(*rest, return_exceptions=True)


asyncio.run(main())
"""


def test_a_step_gathered_with_a_failing_one_runs_once(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script, counts = tmp_path / "flow.py", tmp_path / "counts"
    script.write_text(GATHER_FAILS)

    def run(fail: bool) -> str:
        env = {**child_env, "FAIL": "1" if fail else "0"}
        done = subprocess.run(
            [sys.executable, str(script), str(counts)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run(fail=True) == "failed: check failed"
    assert run(fail=False) == "11"
    # charge finished in the first process, after check's error ended the
    # body: its record was written then, and the resume replayed it.
    assert sorted(counts.read_text().split()) == ["charge", "check", "check"]


def test_a_task_never_awaited_is_recorded_before_the_call_returns(store: durable.Store) -> None:
    ran: list[str] = []

    @durable.step
    async def later() -> str:
        await asyncio.sleep(0)
        ran.append("later")
        return "kept"

    @durable.workflow(store=store, run_id="t")
    async def flow() -> str:
        asyncio.create_task(later())  # noqa: RUF006  # never awaited by the body
        return "body done"

    assert asyncio.run(flow()) == "body done"
    assert ran == ["later"]
    assert durable.load(flow, "t", 0, store=store) == "kept"
    assert asyncio.run(flow()) == "body done"  # completed: nothing runs again
    assert ran == ["later"]


def test_a_cancelled_run_cancels_its_tasks_and_ends(store: durable.Store) -> None:
    ran: list[str] = []

    async def main() -> None:
        started, never = asyncio.Event(), asyncio.Event()

        @durable.step
        async def stuck() -> str:
            ran.append("stuck")
            started.set()
            await never.wait()
            ran.append("finished")  # never reached: cancelled first
            return "late"

        @durable.workflow(store=store, run_id="c")
        async def flow() -> None:
            asyncio.create_task(stuck())  # noqa: RUF006
            await never.wait()

        runner = asyncio.create_task(flow())
        await started.wait()
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
        assert asyncio.all_tasks() == {asyncio.current_task()}  # stuck was cancelled too
        never.set()
        await asyncio.sleep(0)
        (info,) = flow.runs()
        assert info.status == "interrupted"
        assert [s.name for s in flow.history("c")] == ["initial"]  # nothing recorded

    asyncio.run(main())
    assert ran == ["stuck"]
