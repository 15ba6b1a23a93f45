"""Positions in async code (DESIGN §2): an asyncio task created inside a run
numbers its operations in a scope of its own, fixed when the task is created,
so that a resumed run (where replayed steps return at once and live ones do
not) hands every record back to the call that made it, whatever order the
tasks finish in. Resumes happen in new processes after a real crash or a
suspend; executions are counted through an append-only log."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.fanout_work import note, records

SCRIPT = r'''
import asyncio, json, os, random, sys
import durable

N = 6
# Settings are read from the environment at call time: a module constant read
# by a step would count in its fingerprint, and differs between the processes.


def note(tag):
    log = os.environ["ASYNC_LOG"]
    done = open(log).read().split() if os.path.exists(log) else []
    if len(done) == int(os.environ.get("ASYNC_CRASH_AFTER", "-1")):
        os._exit(3)  # a real crash: this step is neither logged nor recorded
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{tag}\n".encode())
    os.close(fd)


async def spin(tag):
    # How long a live step takes, in loop turns, differs per seed: each process
    # sees its tasks finish in another order, deterministically.
    seed = os.environ.get("ASYNC_SEED", "0")
    for _ in range(random.Random(f"{seed}:{tag}").randrange(12)):
        await asyncio.sleep(0)


@durable.step
async def fetch(i):
    await spin(f"fetch{i}")
    note(f"fetch{i}")
    return f"f{i}"


@durable.step
async def parse(text, i):
    await spin(f"parse{i}")
    note(f"parse{i}")
    return f"{text.upper()}-{i}"


async def chain(i):
    return await parse(await fetch(i), i)


@durable.workflow(run_id="gather")
async def gathered():
    return await asyncio.gather(*(chain(i) for i in range(N)))


@durable.workflow(run_id="spawn")
async def spawned():
    tasks = [asyncio.create_task(chain(i)) for i in range(N)]
    head = await fetch(100)  # the body's own position 0, taken while the tasks wait
    tail = [await t for t in reversed(tasks)]
    return [head, *reversed(tail)]


async def branch(i):
    inner = asyncio.create_task(chain(10 * i))
    pair = await asyncio.gather(chain(10 * i + 1), chain(10 * i + 2))
    return [await inner, *pair]


@durable.workflow(run_id="tree")
async def tree():
    return await asyncio.gather(*(branch(i) for i in range(3)))


@durable.step
async def mark(tag):
    note(tag)
    return tag.upper()


async def late():
    await durable.asleep(float(os.environ.get("ASYNC_NAP", "0.2")))
    return await mark("late")


async def early():
    return await mark("early")


@durable.workflow(run_id="timer")
async def timed(approved=False):
    got = await asyncio.gather(late(), early())
    if os.environ.get("ASYNC_HOLD"):
        print("GATHERED", flush=True)  # both tasks are recorded; the parent kills us now
        sys.stdin.readline()
    if not approved:
        durable.suspend("needs approval")
    return got


FLOWS = {"gather": gathered, "spawn": spawned, "tree": tree, "timer": timed}
flow = FLOWS[sys.argv[1]]
overrides = json.loads(os.environ.get("ASYNC_RESUME", "null"))
try:
    if overrides is None:
        run = asyncio.run(flow.run())
    else:
        run = asyncio.run(flow.resume(sys.argv[1], **overrides))
except durable.Suspended:
    print("SUSPENDED", flush=True)
    sys.exit(0)
doc = {"value": run.value, "replayed": run.steps_replayed, "executed": run.steps_executed,
       "resumed": run.resumed_from_step}
print("RESULT " + json.dumps(doc), flush=True)
'''


def chain_value(i: int) -> str:
    return f"F{i}-{i}"


def child(
    tmp_path: Path, env: dict[str, str], mode: str, log: Path, **extra: str
) -> subprocess.Popen[str]:
    script = tmp_path / "flows.py"
    script.write_text(SCRIPT)
    child_env = {**env, "ASYNC_LOG": str(log), **extra}
    return subprocess.Popen(
        [sys.executable, str(script), mode],
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def result(out: str) -> dict[str, Any]:
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]


def lines(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def chain_tags(indexes: list[int]) -> list[str]:
    return sorted(f"{kind}{i}" for i in indexes for kind in ("fetch", "parse"))


CASES = {
    # mode: (chain indexes, extra step tags, crash after this many steps, expected value)
    "gather": (list(range(6)), [], 7, [chain_value(i) for i in range(6)]),
    "spawn": (list(range(6)), ["fetch100"], 6, ["f100", *(chain_value(i) for i in range(6))]),
    "tree": (
        [10 * b + c for b in range(3) for c in range(3)],
        [],
        9,
        [[chain_value(10 * b + c) for c in range(3)] for b in range(3)],
    ),
}


@pytest.mark.parametrize("mode", sorted(CASES))
def test_chained_steps_in_tasks_resume_in_another_order_after_a_crash(
    tmp_path: Path, child_env: dict[str, str], mode: str
) -> None:
    indexes, extra, crash_after, expected = CASES[mode]
    log = tmp_path / "log"
    code, _, err = finish(child(tmp_path, child_env, mode, log, ASYNC_SEED="1",
                                ASYNC_CRASH_AFTER=str(crash_after)))  # fmt: skip
    assert code == 3, err
    first = lines(log)
    assert len(first) == crash_after
    store = durable.open_store(tmp_path / "store")
    wf = {"gather": "gathered", "spawn": "spawned", "tree": "tree"}[mode]
    kept = records(store, wf, mode, "steps")
    assert len(kept) >= crash_after - 1  # the steps logged are recorded (one may be in flight)
    # Operations inside tasks are recorded under paths: steps/<pos>.<task>.<index>[...]
    assert all(n.count(".") % 2 == 0 for n in kept) and any("." in n for n in kept)

    code, out, err = finish(child(tmp_path, child_env, mode, log, ASYNC_SEED="2"))
    assert code == 0, err
    done = result(out)
    assert done["value"] == expected
    everything = sorted(chain_tags(indexes) + extra)
    assert sorted(lines(log)) == everything  # each step body exactly once in total
    assert done["replayed"] + done["executed"] == len(everything)
    assert done["replayed"] == len(first)
    assert done["resumed"] == 0  # the top-level position the tasks hang from

    # The seeds really give another completion order: an uninterrupted run with
    # seed 2 logs its steps in an order the crashed run did not.
    fresh_log = tmp_path / "fresh-log"
    fresh_env = {**child_env, "DURABLE_STORE": str(tmp_path / "fresh")}
    code, out, err = finish(child(tmp_path, fresh_env, mode, fresh_log, ASYNC_SEED="2"))
    assert code == 0, err
    assert result(out)["value"] == expected
    assert lines(fresh_log)[: len(first)] != first


def test_a_timer_in_a_task_then_a_suspend_resumes_in_a_new_process(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Issue 17.1: a replayed asleep returns at once; the step after it must
    still get the record it made, not the one the other task made."""
    log = tmp_path / "log"
    code, out, err = finish(child(tmp_path, child_env, "timer", log))
    assert code == 0, err
    assert out.strip() == "SUSPENDED"
    assert lines(log) == ["early", "late"]  # early finished first: late slept
    names = durable.open_store(tmp_path / "store").record_names("timed", "timer")
    assert "timers/00000000.00000000.00000000" in names

    code, out, err = finish(
        child(tmp_path, child_env, "timer", log, ASYNC_RESUME=json.dumps({"approved": True}))
    )
    assert code == 0, err
    done = result(out)
    assert done["value"] == ["LATE", "EARLY"]
    assert sorted(lines(log)) == ["early", "late"]  # each step once in total
    assert (done["replayed"], done["executed"]) == (3, 0)  # timer and both steps replayed


@pytest.mark.slow
def test_a_timer_in_a_task_after_kill_9(tmp_path: Path, child_env: dict[str, str]) -> None:
    log = tmp_path / "log"
    proc = child(tmp_path, child_env, "timer", log, ASYNC_HOLD="1")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "GATHERED"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    code, out, err = finish(
        child(tmp_path, child_env, "timer", log, ASYNC_RESUME=json.dumps({"approved": True}))
    )
    assert code == 0, err
    assert result(out)["value"] == ["LATE", "EARLY"]
    assert sorted(lines(log)) == ["early", "late"]


# -- in one process: what is refused, and what keeps working --------------------


def counted(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASYNC_POS_LOG", str(tmp_path / "log"))
    return tmp_path / "log"


@durable.step
def blocking(x: int) -> int:
    note(os.environ["ASYNC_POS_LOG"], f"blocking{x}")
    return x * 2


@durable.step
async def awaited(x: int) -> int:
    await asyncio.sleep(0)
    note(os.environ["ASYNC_POS_LOG"], f"awaited{x}")
    return x + 1
