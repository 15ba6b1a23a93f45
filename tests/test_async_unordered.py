"""Tasks created in an order that is not program order (DESIGN §2 "Positions
in async code"). `asyncio.as_completed` (and 3.10's `asyncio.wait`) wrap the
coroutines they are given with `{ensure_future(f) for f in set(fs)}`: in the
order of their addresses in memory, which a resume (replaying instead of
running, in a new process) does not repeat. Numbered by creation order,
a helper's step got the record another helper's step made: after a kill -9
and a resume, helper 5 returned the reply recorded for helper 4, and helper
4's step ran a second time. Such tasks' operations are now refused before
they run; steps given to as_completed themselves, and tasks created first,
keep their positions."""

from __future__ import annotations

import asyncio
import contextvars
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.fanout_work import note, records

who: contextvars.ContextVar[int] = contextvars.ContextVar("who")


def counted(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_helpers_given_to_as_completed_are_refused_before_they_run(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")
    log = tmp_path / "log"

    @durable.step
    async def ask() -> int:
        note(str(log), f"ask{who.get()}")
        return who.get()

    async def helper(i: int) -> object:
        who.set(i)
        try:
            return await ask()
        except durable.ConfigurationError as refused:  # every task ends, its refusal read
            return refused

    async def nested(i: int) -> object:
        # A task created by such a task is no more in program order.
        return (await asyncio.gather(helper(i)))[0]

    @durable.workflow(store=store)
    async def flow(deep: bool) -> list[object]:
        made = [nested(i) if deep else helper(i) for i in range(4)]
        return [await done for done in asyncio.as_completed(made)]

    for deep in (False, True):
        got = asyncio.run(flow.with_options(run_id=f"u-{deep}")(deep))
        assert len(got) == 4
        for refused in got:
            assert isinstance(refused, durable.ConfigurationError)
            assert "asyncio.as_completed() created" in str(refused)
    assert counted(log) == []  # nothing ran
    assert [records(store, flow.name, f"u-{deep}", "steps") for deep in (False, True)] == [[], []]


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="asyncio.wait takes coroutines until 3.11")
def test_helpers_given_to_asyncio_wait_are_refused_on_3_10(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    @durable.step
    async def ask(i: int) -> int:
        return i

    async def helper(i: int) -> int:
        return await ask(i)

    @durable.workflow(store=store, run_id="w")
    async def flow() -> list[int]:
        done, _ = await asyncio.wait([helper(i) for i in range(3)])
        return sorted(t.result() for t in done)

    with pytest.raises(durable.ConfigurationError, match=r"asyncio\.wait\(\) created"):
        asyncio.run(flow())
    assert records(store, flow.name, "w", "steps") == []


SCRIPT = r"""
import asyncio, contextvars, json, os, signal, sys
import durable

who = contextvars.ContextVar("who")


def note(tag):
    log = os.environ["UNORDERED_LOG"]
    done = open(log).read().split() if os.path.exists(log) else []
    if len(done) == int(os.environ.get("UNORDERED_KILL_AT", "-1")):
        os.kill(os.getpid(), signal.SIGKILL)  # neither logged nor recorded
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{tag}\n".encode())
    os.close(fd)


@durable.step
async def ask() -> int:
    # The reply depends on who asks (a session, a prompt built upstream),
    # not on the step's arguments.
    await asyncio.sleep(0.001 * ((7 * who.get()) % 5))
    note(f"ask{who.get()}")
    return who.get()


@durable.step
async def square(i: int) -> int:
    await asyncio.sleep(0.001 * ((3 * i) % 4))
    note(f"square{i}")
    return i * i


async def helper(i):
    who.set(i)
    return i, await ask()


@durable.workflow(run_id="asked")
async def asked():
    tasks = [asyncio.create_task(helper(i)) for i in range(6)]  # program order
    out = {}
    for done in asyncio.as_completed(tasks):
        i, v = await done
        out[i] = v
    squares = sorted([await f for f in asyncio.as_completed([square(i) for i in range(4)])])
    return [sorted(out.items()), squares]


print("RESULT " + json.dumps(asyncio.run(asked())), flush=True)
"""


@pytest.mark.parametrize("kill_at", [2, 5, 7, 9])
def test_tasks_made_first_and_steps_given_to_as_completed_replay_to_their_calls_after_kill_9(
    tmp_path: Path, child_env: dict[str, str], kill_at: int
) -> None:
    script = tmp_path / "asked.py"
    script.write_text(SCRIPT)
    log = tmp_path / "log"
    env = {**child_env, "UNORDERED_LOG": str(log)}
    killed = subprocess.run(
        [sys.executable, str(script)],
        env={**env, "UNORDERED_KILL_AT": str(kill_at)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(counted(log)) == kill_at
    resumed = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    line = next(x for x in resumed.stdout.splitlines() if x.startswith("RESULT "))
    # Every helper gets its own reply, and every step ran once over both processes.
    assert json.loads(line[len("RESULT ") :]) == [[[i, i] for i in range(6)], [0, 1, 4, 9]]
    tags = [f"ask{i}" for i in range(6)] + [f"square{i}" for i in range(4)]
    assert sorted(counted(log)) == sorted(tags)
