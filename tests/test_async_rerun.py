"""on_change="rerun" (and an artifact that changed) in async code: a rerun
discards the changed record and the later ones, in position order, but never
one the attempt already looked up. In async code a later position can be
reached first (a task's 0.0.0 before the body's 0, the body's 1 before a
task's 0.0.0): its record was replayed and used, and forgetting it would run
a finished step again, with another result, after a crash."""

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


def counted(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ASYNC_RERUN_LOG", str(tmp_path / "log"))
    return tmp_path / "log"


@durable.step
async def first() -> int:
    note(os.environ["ASYNC_RERUN_LOG"], "first")
    return counted(Path(os.environ["ASYNC_RERUN_LOG"])).count("first")  # how often it ran


@durable.step
async def shout(x: str) -> str:
    note(os.environ["ASYNC_RERUN_LOG"], f"shout-{x}")
    return x.upper()


@durable.step
async def whisper(x: str) -> str:
    note(os.environ["ASYNC_RERUN_LOG"], f"whisper-{x}")
    return x.lower()


async def task_first(ready: asyncio.Event) -> int:
    got = await first()  # 0.0.0
    ready.set()
    return got


@pytest.mark.parametrize("change", ["arguments", "name"])
def test_rerun_keeps_the_record_a_task_replayed_before_the_change(
    tmp_path: Path, log: Path, change: str
) -> None:
    store = durable.open_store(tmp_path / "store")

    def build(head: str) -> Any:
        @durable.workflow(store=store, run_id="k", name="keep", on_change="rerun")
        async def flow() -> list[Any]:
            ready = asyncio.Event()
            task = asyncio.create_task(task_first(ready))  # its numbering: 0.0.*
            await ready.wait()  # the task's record at 0.0.0 is replayed (or made) now
            top = await (whisper("B") if head == "whisper" else shout(head))  # 0
            got = await task
            return [top, got, await shout(f"used-{got}")]  # 1

        return flow

    assert asyncio.run(build("a")()) == ["A", 1, "USED-1"]
    changed = build("b" if change == "arguments" else "whisper")
    run = asyncio.run(changed.run())
    assert run.value == ["B" if change == "arguments" else "b", 1, "USED-1"]
    # 0.0.0 was replayed before 0 changed: it stays; 0 and 1 run again.
    assert (run.steps_replayed, run.steps_executed) == (1, 2)
    kept = records(store, "keep", "k", "steps")
    assert kept == ["steps/00000000", "steps/00000000.00000000.00000000", "steps/00000001"]
    assert asyncio.run(changed.run()).value == run.value  # completed: nothing runs
    assert counted(log).count("first") == 1  # never twice


async def task_late(x: str, ready: asyncio.Event) -> str:
    await ready.wait()
    return await shout(x)  # 0.0.0


def test_rerun_keeps_a_later_body_record_replayed_before_a_tasks_change(
    tmp_path: Path, log: Path
) -> None:
    """The body's 1 sorts after the task's 0.0.0 but was reached first."""
    store = durable.open_store(tmp_path / "store")

    def build(x: str) -> Any:
        @durable.workflow(store=store, run_id="b", name="body", on_change="rerun")
        async def flow() -> list[str]:
            ready = asyncio.Event()
            task = asyncio.create_task(task_late(x, ready))
            head = await whisper("H")  # 0
            middle = await whisper("M")  # 1
            ready.set()
            return [head, middle, await task]

        return flow

    assert asyncio.run(build("a")()) == ["h", "m", "A"]
    run = asyncio.run(build("b").run())
    assert run.value == ["h", "m", "B"]
    assert (run.steps_replayed, run.steps_executed) == (2, 1)
    assert records(store, "body", "b", "steps") == [
        "steps/00000000",
        "steps/00000000.00000000.00000000",
        "steps/00000001",
    ]
    assert counted(log) == ["whisper-H", "whisper-M", "shout-a", "shout-b"]


def test_an_artifact_that_changed_keeps_what_a_task_replayed(tmp_path: Path, log: Path) -> None:
    """The same for a record reopened because its artifact changed."""
    store = durable.open_store(tmp_path / "store")
    out = tmp_path / "out.txt"

    @durable.step
    async def produce(path: str) -> str:
        note(os.environ["ASYNC_RERUN_LOG"], "produce")
        Path(path).write_text("made\n")
        durable.artifact(path)
        return path

    @durable.workflow(store=store, run_id="art", name="art")
    async def flow() -> list[Any]:
        ready = asyncio.Event()
        task = asyncio.create_task(task_first(ready))
        await ready.wait()
        made = await produce(str(out))  # 0, checked before it is replayed
        return [made, await task]

    assert asyncio.run(flow()) == [str(out), 1]
    out.write_text("edited by hand\n")
    run = asyncio.run(flow.run())
    assert run.value == [str(out), 1]
    assert (run.steps_replayed, run.steps_executed) == (1, 1)
    assert records(store, "art", "art", "steps") == [
        "steps/00000000",
        "steps/00000000.00000000.00000000",
    ]
    assert asyncio.run(flow()) == [str(out), 1]  # completed, its artifact as recorded
    assert counted(log) == ["first", "produce", "produce"]


# -- after a real kill -9 -------------------------------------------------------

SCRIPT = r"""
import asyncio, os, sys
import durable


def note(tag):
    fd = os.open(os.environ["RERUN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{tag}\n".encode())
    os.close(fd)


def runs(tag):
    path = os.environ["RERUN_LOG"]
    return open(path).read().split().count(tag) if os.path.exists(path) else 0


@durable.step
async def a():
    note("a")
    return runs("a")  # how many times it has run: 1, unless it ran again


@durable.step
async def step_x(x):
    note(f"x{x}")
    return x


@durable.step
async def use(r):
    note(f"use{r}")
    if os.environ.get("RERUN_HOLD"):
        print("USING", flush=True)  # the rerun's discard is done; the parent kills us now
        sys.stdin.readline()
    return r * 100


async def one(ready):
    got = await a()  # 0.0.0
    ready.set()
    return got


@durable.workflow(run_id="r", on_change="rerun")
async def flow(x):
    ready = asyncio.Event()
    task = asyncio.create_task(one(ready))
    await ready.wait()  # the task's a() is replayed (or runs) now
    v = await step_x(x)  # 0: changed arguments discard from here
    r = await task
    return [v, r, await use(r)]  # 1


print("RESULT", asyncio.run(flow(int(sys.argv[1]))), flush=True)
"""


@pytest.mark.slow
def test_a_record_replayed_before_a_rerun_survives_a_kill_9(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script = tmp_path / "rerun_flow.py"
    script.write_text(SCRIPT)
    log = tmp_path / "log"
    env = {**child_env, "RERUN_LOG": str(log)}

    def start(x: int, **extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(script), str(x)],
            env={**env, **extra},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def value(proc: subprocess.Popen[str]) -> list[int]:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        return json.loads(line[len("RESULT ") :])  # type: ignore[no-any-return]

    assert value(start(1)) == [1, 1, 100]
    # x changes: a() at 0.0.0 is replayed, then step_x at 0 is discarded and
    # run again, then use() runs live and the process is killed inside it.
    proc = start(2, RERUN_HOLD="1")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "USING"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert counted(log) == ["a", "x1", "use1", "x2", "use1"]
    names = durable.open_store(tmp_path / "store").record_names("rerun_flow.flow", "r")
    assert "steps/00000000.00000000.00000000" in names  # a()'s record was kept

    # The resume replays a() and step_x(2) and runs use() again: a() ran once in all.
    assert value(start(2)) == [2, 1, 100]
    assert counted(log) == ["a", "x1", "use1", "x2", "use1", "use1"]
