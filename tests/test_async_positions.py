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

SCRIPT = r"""
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
"""


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
    wf = {"gather": "flows.gathered", "spawn": "flows.spawned", "tree": "flows.tree"}[mode]
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
    names = durable.open_store(tmp_path / "store").record_names("flows.timed", "timer")
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


def test_a_step_through_asyncio_to_thread_is_refused_and_records_nothing(
    tmp_path: Path, log: Path
) -> None:
    store = durable.open_store(tmp_path / "store")

    @durable.workflow(store=store, run_id="t")
    async def threaded() -> int:
        return await asyncio.to_thread(blocking, 1)

    with pytest.raises(durable.ConfigurationError, match="another thread") as caught:
        asyncio.run(threaded())
    message = str(caught.value)
    assert "asyncio.to_thread" in message and "loop_over" in message
    assert "asyncio.gather" in message and "'blocking'" in message
    assert counted(log) == []  # the step body never ran
    assert records(store, threaded.name, "t", "steps") == []


def test_a_thread_carrying_the_runs_context_is_refused_and_the_run_cannot_complete(
    tmp_path: Path, log: Path
) -> None:
    import contextvars
    import threading

    store = durable.open_store(tmp_path / "store")
    errors: list[BaseException] = []

    def in_thread() -> None:
        try:
            blocking(2)
        except durable.ConfigurationError as e:
            errors.append(e)

    @durable.workflow(store=store, run_id="t")
    def sync_flow() -> int:
        carried = contextvars.copy_context()
        t = threading.Thread(target=carried.run, args=(in_thread,))
        t.start()
        t.join()
        return blocking(3)  # the refusal is final: the run cannot end without the thread's work

    with pytest.raises(durable.ConfigurationError, match="another thread"):
        sync_flow()
    assert len(errors) == 1 and "'blocking'" in str(errors[0])
    assert counted(log) == []
    assert records(store, sync_flow.name, "t", "steps") == []


def _through_a_thread(x: int) -> int:
    import threading

    got: list[Any] = []

    def call() -> None:
        try:
            got.append(blocking(x))
        except durable.ConfigurationError as e:  # raised where the body can see it
            got.append(e)

    t = threading.Thread(target=call)
    t.start()
    t.join()
    if isinstance(got[0], Exception):
        raise got[0]
    return int(got[0])


def _through_a_pool(x: int) -> int:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return sum(pool.map(blocking, [x, x + 1]))


def _through_run_in_executor(x: int) -> int:
    async def main() -> int:
        return int(await asyncio.get_running_loop().run_in_executor(None, blocking, x))

    return asyncio.run(main())


def _through_a_thread_pool_made_before(x: int) -> int:
    """multiprocessing.pool.ThreadPool made before the run: its threads are
    not the body's, the body hands them its calls (apply, map, imap)."""
    pool = _MADE_BEFORE[0]
    return int(pool.apply(blocking, (x,))) + sum(pool.map(blocking, [x])) + sum(
        pool.imap_unordered(blocking, [x])
    )


_MADE_BEFORE: list[Any] = []


@pytest.fixture
def made_before() -> Any:
    from multiprocessing.pool import ThreadPool

    with ThreadPool(2) as pool:
        _MADE_BEFORE[:] = [pool]
        yield pool


@pytest.mark.usefixtures("made_before")
@pytest.mark.parametrize(
    "way",
    [_through_a_thread, _through_a_pool, _through_run_in_executor,
     _through_a_thread_pool_made_before],
)
def test_a_step_called_from_a_thread_the_body_started_is_refused_before_it_runs(
    tmp_path: Path, log: Path, way: Any
) -> None:
    """DESIGN §2: a step called from a thread the body started gets a
    position or a clear error. Such a call used to run plainly: executed,
    never recorded, and executed again by every resume."""
    store = durable.open_store(tmp_path / "store")

    @durable.workflow(store=store, run_id="t")
    def flow() -> int:
        return int(way(5)) + blocking(1)

    for _ in range(2):  # and the same again on a resume: never executed
        with pytest.raises(durable.ConfigurationError, match="another thread than the one"):
            flow()
    assert counted(log) == []
    assert records(store, flow.name, "t", "steps") == []


def test_threads_outside_a_body_or_after_it_call_steps_plainly(
    tmp_path: Path, log: Path
) -> None:
    """Inside a step, and in a pool made in a run and used after it
    returned, steps are plain calls as before; loop_over's own pool runs its
    items."""
    import concurrent.futures

    store = durable.open_store(tmp_path / "store")
    pools: list[concurrent.futures.ThreadPoolExecutor] = []

    @durable.step
    def fan(x: int) -> int:
        return _through_a_thread(x) + _through_a_pool(x)

    @durable.workflow(store=store, run_id="t")
    def flow() -> list[int]:
        pools.append(concurrent.futures.ThreadPoolExecutor(1))
        pools[0].submit(int).result()  # its worker thread starts in the body
        return [fan(10), *durable.loop_over(blocking, [20], executor=pools[0])]

    assert flow() == [20 + 42, 40]
    assert pools[0].submit(blocking, 30).result() == 60  # the body has returned
    assert sorted(counted(log)) == ["blocking10", "blocking10", "blocking11", "blocking20",
                                    "blocking30"]
    pools[0].shutdown()


def test_a_task_durable_did_not_see_created_fails_closed(tmp_path: Path, log: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    async def two() -> list[int]:
        return [await awaited(1), await awaited(2)]

    @durable.workflow(store=store, run_id="t")
    async def flow() -> list[int]:
        first = await awaited(0)
        # Built directly, not through the loop's task factory: it shares the body's numbering.
        hidden = asyncio.Task(two())
        return [first, *await hidden]

    with pytest.raises(durable.ConfigurationError, match="did not see being created"):
        asyncio.run(flow())
    assert counted(log) == ["awaited0"]
    assert records(store, flow.name, "t", "steps") == ["steps/00000000"]


def test_sync_steps_in_an_async_body_and_in_its_tasks(tmp_path: Path, log: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    async def mixed(x: int) -> int:
        await asyncio.sleep(0)
        return blocking(x) + await awaited(x)

    @durable.workflow(store=store, run_id="m")
    async def flow(go: bool = False) -> list[int]:
        head = blocking(1)
        both = await asyncio.gather(mixed(10), mixed(20))
        if not go:
            durable.suspend("waiting")
        return [head, *both, blocking(2)]

    with pytest.raises(durable.Suspended):
        asyncio.run(flow())
    assert records(store, flow.name, "m", "steps") == [
        "steps/00000000",
        "steps/00000001.00000000.00000000",
        "steps/00000001.00000000.00000001",
        "steps/00000001.00000001.00000000",
        "steps/00000001.00000001.00000001",
    ]
    run = asyncio.run(flow.resume("m", go=True))
    assert run.value == [2, 20 + 11, 40 + 21, 4]
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (5, 1, 1)
    assert sorted(counted(log)) == sorted(
        ["blocking1", "blocking10", "awaited10", "blocking20", "awaited20", "blocking2"]
    )


def test_asyncio_run_inside_a_sync_workflow(tmp_path: Path, log: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    async def main() -> list[int]:
        return [await awaited(1), blocking(2)]

    @durable.workflow(store=store, run_id="s")
    def flow(go: bool = False) -> list[int]:
        inner = asyncio.run(main())  # main is the only task: it numbers in the body's scope
        again = asyncio.run(main())
        if not go:
            durable.suspend("waiting")
        return [*inner, *again, blocking(3)]

    with pytest.raises(durable.Suspended):
        flow()
    run = flow.resume("s", go=True)
    assert run.value == [2, 4, 2, 4, 6]
    assert (run.steps_replayed, run.steps_executed) == (4, 1)
    assert sorted(counted(log)) == sorted(["awaited1", "blocking2"] * 2 + ["blocking3"])

    async def fan() -> list[int]:
        return await asyncio.gather(awaited_twice(1), awaited_twice(2))

    @durable.workflow(store=store, run_id="fan")
    def tasks_in_a_sync_flow() -> list[int]:
        return asyncio.run(fan())

    with pytest.raises(durable.ConfigurationError, match="make the workflow `async def`"):
        tasks_in_a_sync_flow()


async def awaited_twice(x: int) -> int:
    return await awaited(await awaited(x))


@pytest.mark.parametrize("first", ["alice", "bob"])
def test_tasks_under_asyncio_run_in_a_sync_workflow_are_refused_whichever_asks_first(
    tmp_path: Path, log: Path, first: str
) -> None:
    """The tasks main gathers were not seen being created: the one that
    calls first (timing) must not take the body's numbering, or a resume
    where the other calls first hands it the first one's record."""
    store = durable.open_store(tmp_path / "store")
    delays = {"alice": 0.02, "bob": 0.02, first: 0.0}

    async def book(who: str) -> tuple[str, int]:
        await asyncio.sleep(delays[who])
        return who, await awaited(0)

    @durable.workflow(store=store, run_id="book")
    def flow() -> list[tuple[str, int]]:
        async def main() -> list[tuple[str, int]]:
            return list(await asyncio.gather(book("alice"), book("bob")))

        return asyncio.run(main())

    with pytest.raises(durable.ConfigurationError, match="make the workflow `async def`") as e:
        flow()
    assert "other than the coroutine that asyncio.run()" in str(e.value)
    assert counted(log) == []  # refused before anything ran
    assert records(store, flow.name, "book", "steps") == []

    async def one_helper() -> int:  # even a single task: whether it calls first is timing
        return (await asyncio.gather(book("alice")))[0][1]

    @durable.workflow(store=store, run_id="one")
    def single() -> int:
        return asyncio.run(one_helper())

    with pytest.raises(durable.ConfigurationError, match="nothing was executed or recorded"):
        single()
    assert counted(log) == []
    assert records(store, single.name, "one", "steps") == []


def test_a_task_main_leaves_behind_never_takes_the_body_over(tmp_path: Path, log: Path) -> None:
    """Once main finished, a task it left (cancelled by asyncio.run's
    shutdown) is refused: the body's numbering is not claimed again by
    whichever task asks next."""
    store = durable.open_store(tmp_path / "store")
    refused: list[BaseException] = []

    async def left_behind() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            try:
                await awaited(7)
            except durable.ConfigurationError as e:
                refused.append(e)

    left: list[asyncio.Task[None]] = []

    async def main() -> int:
        left.append(asyncio.create_task(left_behind()))  # not awaited: asyncio.run cancels it
        await asyncio.sleep(0)
        return await awaited(1)

    @durable.workflow(store=store, run_id="left")
    def flow() -> list[int]:
        return [asyncio.run(main()), blocking(3)]

    assert flow() == [2, 6]
    assert len(refused) == 1 and "other than the coroutine" in str(refused[0])
    assert counted(log) == ["awaited1", "blocking3"]
    assert records(store, flow.name, "left", "steps") == ["steps/00000000", "steps/00000001"]


def test_main_of_asyncio_run_numbers_in_the_body_of_a_sync_workflow(
    tmp_path: Path, log: Path
) -> None:
    """What stays supported: main awaiting steps one after another, or
    gathering the steps' own calls (they take their positions when called,
    in main), under asyncio.run, an event loop's run_until_complete (twice on
    one loop) and, on 3.11+, asyncio.Runner."""
    store = durable.open_store(tmp_path / "store")

    async def main(base: int) -> list[int]:
        pair = await asyncio.gather(awaited(base), awaited(base + 1))
        return [*pair, await awaited(base + 2)]

    def drive(base: int) -> list[int]:
        if base == 10:
            return asyncio.run(main(base))
        if base in (20, 30):
            loop = drive.loop  # type: ignore[attr-defined]
            return loop.run_until_complete(main(base))  # type: ignore[no-any-return]
        if sys.version_info >= (3, 11):
            with asyncio.Runner() as runner:
                return runner.run(main(base))
        return asyncio.run(main(base))

    @durable.workflow(store=store, run_id="main")
    def flow(go: bool = False) -> list[int]:
        drive.loop = asyncio.new_event_loop()  # type: ignore[attr-defined]
        try:
            got = [*drive(10), *drive(20), *drive(30), *drive(40)]
        finally:
            drive.loop.close()  # type: ignore[attr-defined]
        if not go:
            durable.suspend("waiting")
        return got

    with pytest.raises(durable.Suspended):
        flow()
    expected = [b + i + 1 for b in (10, 20, 30, 40) for i in range(3)]
    assert records(store, flow.name, "main", "steps") == [f"steps/{i:08d}" for i in range(12)]
    run = flow.resume("main", go=True)
    assert run.value == expected
    assert (run.steps_replayed, run.steps_executed) == (12, 0)
    assert len(counted(log)) == 12


def test_a_task_the_body_left_running_ends_before_the_run(tmp_path: Path, log: Path) -> None:
    """The run waits for the tasks its body created, as a TaskGroup does:
    their steps are recorded while the run is open (a step finishing after
    the run ended could not be, and a resume would run it again)."""
    store = durable.open_store(tmp_path / "store")
    left: list[asyncio.Task[int]] = []

    @durable.workflow(store=store, run_id="o")
    async def flow() -> int:
        left.append(asyncio.create_task(awaited_twice(5)))
        return 1

    async def main() -> int:
        assert await flow() == 1
        assert left[0].done()  # before the call returned
        return await left[0]

    assert asyncio.run(main()) == 7
    assert counted(log) == ["awaited5", "awaited6"]
    assert len(records(store, flow.name, "o", "steps")) == 2
    assert asyncio.run(flow()) == 1  # completed: replayed, nothing runs again
    assert counted(log) == ["awaited5", "awaited6"]


def test_the_task_factory_chains_to_the_users_and_is_removed_after_the_run(
    tmp_path: Path, log: Path
) -> None:
    store = durable.open_store(tmp_path / "store")
    made: list[str] = []

    def users_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        made.append(coro.__qualname__)  # its own tasks too (loop shutdown)
        return asyncio.Task(coro, loop=loop, **kw)

    @durable.workflow(store=store, run_id="f")
    async def flow() -> list[int]:
        return await asyncio.gather(awaited_twice(1), awaited_twice(2))

    async def main() -> tuple[list[int], bool]:
        loop = asyncio.get_running_loop()
        loop.set_task_factory(users_factory)
        value = await flow()
        return value, loop.get_task_factory() is users_factory

    assert asyncio.run(main()) == ([3, 4], True)
    assert made[:2] == ["awaited_twice", "awaited_twice"]
    assert records(store, flow.name, "f", "steps") == [
        "steps/00000000.00000000.00000000",
        "steps/00000000.00000000.00000001",
        "steps/00000000.00000001.00000000",
        "steps/00000000.00000001.00000001",
    ]

    async def plain() -> object:
        await flow()  # replayed; the loop has no factory before or after
        return asyncio.get_running_loop().get_task_factory()

    assert asyncio.run(plain()) is None
    assert len(counted(log)) == 4


# -- paths in storage, history, show, fork and on_change="rerun" -----------------


def test_position_names_parse_back_and_order_a_path_after_its_prefix() -> None:
    from durable._storage.keys import PositionPath as Pos
    from durable._storage.keys import (
        attempts_name,
        format_position,
        item_name,
        item_of,
        parse_name,
        position_key,
        record_name,
        timer_name,
    )

    path = Pos((2, 0, 1))
    assert record_name(3) == "steps/00000003"
    assert record_name(path) == "steps/00000002.00000000.00000001"
    assert parse_name(attempts_name(path)) == ("attempts", path)
    assert parse_name(timer_name(path)) == ("timers", path)
    assert item_of(item_name(path, 4)) == (path, 4)
    assert format_position(path) == "2.0.1" and format_position(7) == "7"
    # Only the names this module writes: no second spelling of one position.
    for odd in ("steps/2", "steps/00000002.00000000", "steps/00000002.x", "steps/0000000²"):
        assert parse_name(odd) is None
    order = [3, Pos((2, 1, 0)), 2, Pos((2, 0, 1)), Pos((2, 0, 0, 0, 0)), Pos((2, 0, 0))]
    assert sorted(order, key=position_key) == [
        2, Pos((2, 0, 0)), Pos((2, 0, 0, 0, 0)), Pos((2, 0, 1)), Pos((2, 1, 0)), 3,
    ]  # fmt: skip


@durable.step
async def shout(x: str) -> str:
    await asyncio.sleep(0)
    note(os.environ["ASYNC_POS_LOG"], f"shout-{x}")
    return x.upper()


def test_rerun_discards_from_the_changed_call_in_path_order(tmp_path: Path, log: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    async def pair(tag: str) -> str:
        return await shout(await shout(tag))

    def build(second: str) -> Any:
        @durable.workflow(store=store, run_id="r", name="rr", on_change="rerun")
        async def flow() -> list[str]:
            head = await shout("a")  # 0
            both = await asyncio.gather(pair("b"), pair(second))  # 1.0.*, 1.1.*
            return [head, *both, await shout("z")]  # 1

        return flow

    assert asyncio.run(build("c")()) == ["A", "B", "C", "Z"]
    assert len(counted(log)) == 6
    # Same steps, one task's arguments differ: the records from 1.1.0 on go
    # (1.1.*, then 2 ...), the body's 0 and 1 and the other task's stay.
    run = asyncio.run(build("d").run())
    assert run.value == ["A", "B", "D", "Z"]
    assert counted(log)[6:] == ["shout-d", "shout-D"]
    assert (run.steps_replayed, run.steps_executed, run.resumed_from_step) == (4, 2, 1)


def test_history_show_and_the_html_timeline_print_paths(
    tmp_path: Path, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from durable._cli.main import main
    from durable._storage.keys import PositionPath as Pos

    store = durable.open_store(tmp_path / "store")

    @durable.workflow(store=store, run_id="h", name="hist")
    async def flow() -> list[int]:
        first = await awaited(0)
        return [first, *await asyncio.gather(awaited_twice(1), awaited_twice(2))]

    asyncio.run(flow())
    steps = flow.history("h")[1:]  # after the "initial" entry
    assert [s.position for s in steps] == [
        0, Pos((1, 0, 0)), Pos((1, 0, 1)), Pos((1, 1, 0)), Pos((1, 1, 1)),
    ]  # fmt: skip
    url = str(tmp_path / "store")
    assert main(["--store", url, "show", "h"]) == 0
    text = capsys.readouterr().out
    table = [line.split()[0] for line in text.splitlines()[text.splitlines().index("") + 2 :]]
    assert table == ["0", "1.0.0", "1.0.1", "1.1.0", "1.1.1"]
    assert main(["--store", url, "show", "h", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["position"] for s in doc["steps"]] == [0, "1.0.0", "1.0.1", "1.1.0", "1.1.1"]
    page = tmp_path / "h.html"
    assert main(["--store", url, "show", "h", "--html", str(page)]) == 0
    assert 'data-position="1.1.0"' in page.read_text()
    assert flow.runs()[0].steps == 5  # every finished operation counts


def test_idempotency_key_of_a_step_in_a_task(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    @durable.step
    async def key() -> str:
        ctx = durable.current_run()
        assert ctx is not None
        return ctx.idempotency_key()

    async def inner() -> str:
        return await key()

    @durable.workflow(store=store, run_id="k")
    async def flow() -> list[str]:
        return [await key(), *await asyncio.gather(inner(), inner())]

    keys = asyncio.run(flow())
    # By position, then the call's digest: the same call (no arguments) in each.
    assert [k.split("/")[0] for k in keys] == ["k:0", "k:1.0.0", "k:1.1.0"]
    assert len({k.split("/")[1] for k in keys}) == 1


def test_fork_copies_the_paths_that_hang_from_earlier_positions(tmp_path: Path, log: Path) -> None:
    store = durable.open_store(tmp_path / "store")

    @durable.workflow(store=store, run_id="src", name="forked")
    async def flow() -> list[int]:
        both = await asyncio.gather(awaited_twice(1), awaited_twice(2))  # 0.0.*, 0.1.*
        return [*both, await awaited(10), await awaited(20)]  # 0, 1

    assert asyncio.run(flow()) == [3, 4, 11, 21]
    assert len(counted(log)) == 6
    run = asyncio.run(flow.fork("src", at=1, new_run_id="copy"))
    assert run.value == [3, 4, 11, 21]
    assert counted(log)[6:] == ["awaited20"]  # positions 0 and 0.*.* were copied
    assert (run.steps_replayed, run.resumed_from_step) == (5, 1)


def test_blocks_and_timers_inside_tasks_take_task_positions(
    tmp_path: Path, log: Path, clock: Any
) -> None:
    store = durable.open_store(tmp_path / "store")

    async def lane(base: int) -> list[int]:
        await durable.asleep(5)
        doubled = durable.loop_over(blocking, [base, base + 1])  # a sync block in a task
        return [*doubled, *await durable.loop_over(awaited, [base])]

    @durable.workflow(store=store, run_id="l")
    async def flow(go: bool = False) -> list[list[int]]:
        lanes = await asyncio.gather(lane(10), lane(20))
        if not go:
            durable.suspend("waiting")
        return lanes

    with pytest.raises(durable.Suspended):
        asyncio.run(flow())
    names = store.record_names(flow.name, "l")
    for task in (0, 1):
        assert f"timers/00000000.0000000{task}.00000000" in names
        for op in range(3):
            assert f"steps/00000000.0000000{task}.0000000{op}" in names
    executed = len(counted(log))
    run = asyncio.run(flow.resume("l", go=True))
    assert run.value == [[20, 22, 11], [40, 42, 21]]
    assert (run.steps_replayed, run.steps_executed) == (6, 0)
    assert len(counted(log)) == executed == 6


POOL_MADE_IN_THE_BODY = """\
import sys
import durable

assert "concurrent.futures.thread" not in sys.modules  # imported by the body, after the run started
POOLS = []


@durable.step
def inner(x):
    with open(sys.argv[1], "a") as f:
        f.write(f"{x}\\n")
    return x * 2


@durable.step
def outer(n):
    return list(POOLS[0].map(inner, range(n)))  # threads inside a step: plain calls


@durable.workflow
def flow(n, kind):
    if kind == "executor":
        import concurrent.futures

        POOLS.append(concurrent.futures.ThreadPoolExecutor(2))
        POOLS[0].submit(int).result()  # the pool's threads start in the body
    else:
        from multiprocessing.pool import ThreadPool

        POOLS.append(ThreadPool(2))
    return outer(n)


print(flow(3, sys.argv[2]))
"""


@pytest.mark.parametrize("kind", ["executor", "thread pool"])
def test_a_pool_the_body_made_serves_a_step_after_a_lazy_import(
    tmp_path: Path, child_env: dict[str, str], kind: str
) -> None:
    """A pool made in the body (its module imported there, after the run
    started) then used inside a step: the step's calls are plain calls,
    whichever module was imported first. The pool's threads, started in the
    body, kept the run's mark, and the step's inner calls were refused."""
    script, log = tmp_path / "pooled.py", tmp_path / "log"
    script.write_text(POOL_MADE_IN_THE_BODY)
    done = subprocess.run(
        [sys.executable, str(script), str(log), kind],
        env=child_env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[0,", "2,", "4]"]
    assert sorted(log.read_text().split()) == ["0", "1", "2"]


def test_a_thread_that_outlives_the_body_cannot_run_a_step(tmp_path: Path, log: Path) -> None:
    """A thread the body started and left running (not joined) calling a
    step after the body suspended: it ran plainly, unrecorded, and the
    resume, running the body again, ran it again (2 executions of a step an
    uninterrupted run calls once, none recorded). It is refused now, as
    while the body runs; a pool's threads are marked per call (the test
    above), so a pool kept after the run still serves plain calls."""
    import threading

    store = durable.open_store(tmp_path / "store")
    left: list[tuple[threading.Thread, threading.Event]] = []
    errors: list[BaseException] = []

    def later(gate: threading.Event) -> None:
        gate.wait()
        try:
            blocking(7)
        except durable.ConfigurationError as e:
            errors.append(e)

    @durable.workflow(store=store, run_id="t")
    def flow(approved: str | None = None) -> str:
        gate = threading.Event()
        thread = threading.Thread(target=later, args=(gate,))
        thread.start()
        left.append((thread, gate))
        if approved is None:
            durable.suspend("waiting")
        return approved

    def release() -> None:
        while left:
            thread, gate = left.pop()
            gate.set()
            thread.join()

    with pytest.raises(durable.Suspended):
        flow()
    release()
    assert flow.resume("t", approved="yes").value == "yes"
    release()
    assert counted(log) == []
    assert len(errors) == 2 and "after its workflow body" in str(errors[0])


def test_a_thread_that_outlives_the_body_may_start_a_run_of_its_own(
    tmp_path: Path, log: Path
) -> None:
    """A workflow called there is a run of its own, recorded (a resume
    calling it again replays it), not a refused operation of the first."""
    import threading

    store = durable.open_store(tmp_path / "store")
    left: list[tuple[threading.Thread, threading.Event]] = []
    got: list[int] = []

    @durable.workflow(store=store, run_id="other")
    def other() -> int:
        return blocking(4)

    def later(gate: threading.Event) -> None:
        gate.wait()
        got.append(other())

    @durable.workflow(store=store, run_id="t")
    def flow() -> str:
        gate = threading.Event()
        thread = threading.Thread(target=later, args=(gate,))
        thread.start()
        left.append((thread, gate))
        return "done"

    for _ in range(2):
        assert flow.with_options(restart=True)() == "done"
        thread, gate = left.pop()
        gate.set()
        thread.join()
    assert got == [8, 8]
    assert counted(log) == ["blocking4"]  # the second call replayed the completed run


def test_the_wrapped_pools_take_their_arguments_as_before(tmp_path: Path) -> None:
    """The wrappers a run puts on the pools keep their signatures (func=)."""
    from multiprocessing.pool import ThreadPool

    @durable.workflow(store=durable.open_store(tmp_path / "store"), run_id="t")
    def flow() -> int:
        return 1

    assert flow() == 1  # installs them
    with ThreadPool(1) as pool:
        assert pool.apply_async(func=len, args=([1, 2],)).get() == 2
        assert pool.apply(len, ([1],)) == 1
        assert pool.starmap(max, [(1, 2)]) == [2]
