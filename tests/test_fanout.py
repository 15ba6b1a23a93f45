"""loop_over on this process, a thread pool and a process pool: order,
exactly-once execution (counted through files), per-item checkpoints,
failures, retries and progress."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import durable
from tests.clikit import on_a_terminal
from tests.fanout_work import (
    Worker,
    expected,
    flaky,
    gate,
    gated,
    hopeless,
    item_indexes,
    logged,
    picky,
    plain_work,
    records,
    tagged_work,
    work,
)

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["inline", "threads", "processes"]


@pytest.fixture(scope="module")
def process_pool() -> Iterator[cf.ProcessPoolExecutor]:
    # spawn: workers share nothing with this process but what is pickled to them.
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        yield pool


@pytest.fixture
def executor(request: Any, process_pool: cf.ProcessPoolExecutor) -> Iterator[Any]:
    if request.param == "inline":
        yield None
    elif request.param == "threads":
        with cf.ThreadPoolExecutor(4) as pool:
            yield pool
    else:
        yield process_pool



def fmt(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


@pytest.mark.parametrize("executor", KINDS, indirect=True)
@pytest.mark.parametrize("fn", [work, plain_work], ids=["step", "function"])
def test_results_in_order_each_item_once(tmp_path: Path, executor: Any, fn: Any) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(40)]
    sequential = [fn((str(tmp_path / "seq"), i)) for i in range(40)]

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(fn, items, executor=executor)

    run = fan.run(items)
    assert run.value == sequential == [expected(i) for i in range(40)]
    assert sorted(logged(log)) == list(range(40))  # each item exactly once
    assert run.steps_executed == 1  # one block, one record
    again = fan.run(items)
    assert again.value == sequential
    assert len(logged(log)) == 40  # the re-run executed nothing


@pytest.mark.parametrize("executor", KINDS, indirect=True)
@pytest.mark.parametrize("method", ["work", "cached"])
def test_a_step_reached_as_a_method_runs_with_its_instance(
    tmp_path: Path, executor: Any, method: str
) -> None:
    """`loop_over(obj.step, items)`: before, the step was found through its
    function and run without its instance (TypeError: missing 'item')."""
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(6)]
    fn = getattr(Worker("a:"), method)

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(fn, items, executor=executor, checkpoint_items=True)

    assert fan(items) == [f"a:{expected(i)}" for i in range(6)]
    assert fan(items) == [f"a:{expected(i)}" for i in range(6)]
    assert sorted(logged(log)) == list(range(6))  # each item once


@pytest.mark.parametrize("executor", KINDS, indirect=True)
def test_a_decorator_over_a_step_runs_around_each_item(tmp_path: Path, executor: Any) -> None:
    """`@tagged @durable.step def tagged_work`: each item gives what calling
    tagged_work gives. Before, the block found the step through the
    attributes functools.wraps copied and ran its body alone: "item-0-0"
    where the call gives "tagged:item-0-0"."""
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(4)]
    called = [tagged_work((str(tmp_path / "plain"), i)) for i in range(4)]

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(tagged_work, items, executor=executor)

    assert fan(items) == called == [f"tagged:{expected(i)}" for i in range(4)]
    assert durable.loop_over(tagged_work, items) == called  # outside a run too
    assert sorted(logged(log)) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_an_async_step_reached_as_a_method_runs_with_its_instance(tmp_path: Path) -> None:
    import asyncio

    log = str(tmp_path / "log")
    items = [(log, i) for i in range(3)]

    @durable.workflow(store=str(tmp_path / "store"))
    async def fan(items: list[tuple[str, int]]) -> list[str]:
        return await durable.loop_over(Worker("b:").awork, items)

    assert asyncio.run(fan(items)) == [f"b:{expected(i)}" for i in range(3)]
    assert sorted(logged(log)) == list(range(3))


@pytest.mark.parametrize("executor", KINDS, indirect=True)
@pytest.mark.parametrize("checkpoint", [True, False], ids=["checkpoint", "all-or-nothing"])
def test_failure_keeps_items_and_resume_runs_the_rest(
    tmp_path: Path, executor: Any, checkpoint: bool
) -> None:
    log = str(tmp_path / "log")
    Path(log + ".fail").write_text("13")
    items = [(log, i) for i in range(20)]
    store = durable.open_store(str(tmp_path / "store"))

    @durable.workflow(store=store, run_id="r1")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(picky, items, executor=executor, checkpoint_items=checkpoint)

    with pytest.raises(ValueError) as caught:
        fan(items)
    assert type(caught.value) is ValueError  # the item's own exception, not a wrapper
    assert "item 13 refused" in str(caught.value)
    assert "item 13 (of 20) of loop_over(picky) failed" in fmt(caught.value)
    kept = item_indexes(store, fan.name, "r1")
    first = logged(log)
    assert 13 not in first
    if checkpoint:
        assert kept == set(first)  # every finished item was recorded as it completed
        if executor is None:
            assert kept == set(range(13))
    else:
        assert kept == set()

    Path(log + ".fail").unlink()
    run = fan.run(items)
    resumed = logged(log)[len(first) :]
    assert sorted(resumed) == sorted(set(range(20)) - kept)  # only the items without a result
    assert run.value == [expected(i) for i in range(20)]
    assert item_indexes(store, fan.name, "r1") == set()  # compacted into the block record
    assert records(store, fan.name, "r1", "steps") == ["steps/00000000"]


def test_running_items_finish_and_are_kept_after_a_failure(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(12)]
    store = durable.open_store(str(tmp_path / "store"))
    gate.reset()

    @durable.workflow(store=store, run_id="r1")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        with cf.ThreadPoolExecutor(4) as pool:
            return durable.loop_over(gated, items, executor=pool, checkpoint_items=True)

    with pytest.raises(RuntimeError, match="item 0 fails"):
        fan(items)
    kept = item_indexes(store, fan.name, "r1")
    # Items 1-3 were running when item 0 failed: they finished and were recorded.
    assert {1, 2, 3} <= kept and 0 not in kept
    assert kept == set(logged(log))


def test_retries_happen_on_the_worker(tmp_path: Path, process_pool: Any) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(6)]

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(flaky, items, executor=process_pool)

    assert fan(items) == [expected(i) for i in range(6)]
    assert sorted(logged(log)) == sorted(list(range(6)) * 3)  # retries=2: three attempts each


@pytest.mark.parametrize("executor", KINDS, indirect=True)
def test_retries_exhausted_raise_the_original_error(tmp_path: Path, executor: Any) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(8)]

    @durable.workflow(store=str(tmp_path / "store"))
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(hopeless, items, executor=executor)

    with pytest.raises(KeyError) as caught:
        fan(items)
    assert "item 5 (of 8)" in fmt(caught.value)
    assert logged(log).count(5) == 2  # retries=1: two attempts, then the block fails


def test_progress_callback_counts_restored_items(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    Path(log + ".fail").write_text("6")
    items = [(log, i) for i in range(10)]
    seen: list[durable.Progress] = []

    @durable.workflow(store=str(tmp_path / "store"), run_id="r1")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(picky, items, checkpoint_items=True, progress=seen.append)

    with pytest.raises(ValueError):
        fan(items)
    assert [p.done for p in seen] == [1, 2, 3, 4, 5, 6]
    Path(log + ".fail").unlink()
    seen.clear()
    fan(items)
    assert [p.done for p in seen] == [7, 8, 9, 10]  # six were restored from checkpoints
    assert {p.total for p in seen} == {10}
    assert {p.name for p in seen} == {"loop_over(picky)"}
    assert all(p.elapsed >= 0 and p.rate >= 0 for p in seen)
    assert seen[-1].remaining == 0


def test_loop_over_outside_a_workflow_is_a_plain_map(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    with cf.ThreadPoolExecutor(3) as pool:
        out = durable.loop_over(work, [(log, i) for i in range(9)], executor=pool)
    assert out == [expected(i) for i in range(9)]
    assert sorted(logged(log)) == list(range(9))


def test_bad_arguments_are_refused_before_anything_runs(tmp_path: Path) -> None:
    async def coro(x: int) -> int:
        return x

    with pytest.raises(durable.ConfigurationError, match="no executor"):
        with cf.ThreadPoolExecutor(1) as pool:
            durable.loop_over(coro, [1], executor=pool)
    with pytest.raises(durable.ConfigurationError, match=r"concurrent\.futures\.Executor"):
        durable.loop_over(work, [(str(tmp_path / "log"), 1)], executor=object())
    with pytest.raises(durable.ConfigurationError, match="at least 1"):
        durable.loop_over(work, [], max_concurrency=0)
    assert not (tmp_path / "log").exists()


MAIN_SCRIPT = """
import concurrent.futures as cf, json, multiprocessing, os, sys
import durable

@durable.step
def shout(item):
    log, word = item
    with open(log, "a") as f:
        f.write(word + "\\n")
    return word.upper() + "!"

@durable.workflow(store=sys.argv[2])
def fan(items):
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        return durable.loop_over(shout, items, executor=pool, checkpoint_items=True)

if __name__ == "__main__":
    print(json.dumps(fan([(sys.argv[1], w) for w in ["a", "b", "c", "d", "e"]])))
"""


def test_a_step_defined_in_main_runs_on_a_process_pool(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(MAIN_SCRIPT)
    log = tmp_path / "log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(script), str(log), str(tmp_path / "store")]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '["A!", "B!", "C!", "D!", "E!"]'
    assert sorted(log.read_text().split()) == ["a", "b", "c", "d", "e"]


SCALED_SCRIPT = """
import functools, os, sys
import durable

def scaled(k):
    def decorate(f):
        @functools.wraps(f)
        def wrapper(x):
            return k * f(x)
        return wrapper
    return decorate

@scaled(int(os.environ["K"]))
@durable.step
def inc(x: int) -> int:
    with open(sys.argv[1], "a") as f:
        f.write(f"{x}\\n")
    return x + 1

@durable.workflow(store=sys.argv[2], run_id="scaled")
def flow() -> list:
    out = durable.loop_over(inc, [1, 2])
    if os.environ.get("CRASH"):
        os._exit(3)
    return out

try:
    print(flow())
except durable.DefinitionChangedError:
    print("refused")
"""


def test_a_block_of_a_decorated_step_counts_what_the_decorator_captured(tmp_path: Path) -> None:
    """The block records what the decorator made of each item, so the
    factor it captured (from the environment here) is an argument of the
    block: a resume with another factor is refused, with the same one it
    replays. Each process gives what calling the decorated step gives."""
    script, log = tmp_path / "scaled.py", tmp_path / "log"
    script.write_text(SCALED_SCRIPT)

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-W", "ignore", str(script), str(log), str(tmp_path / "store")]
        full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)

    assert run(K="2", CRASH="1").returncode == 3
    assert run(K="3").stdout.strip() == "refused"
    assert run(K="2").stdout.strip() == "[4, 6]"
    assert log.read_text().split() == ["1", "2"]  # the replay ran nothing


BAR_SCRIPT = """
import sys
import durable
from durable._fanout import progress

progress.DELAY = 0  # draw from the first item: the test is short

def double(x):
    return 2 * x

@durable.workflow(store=sys.argv[1])
def fan(n):
    return durable.loop_over(double, range(n))

print(sum(fan(25)), file=sys.stdout)
"""


def _run_bar_script(tmp_path: Path, stderr_tty: bool) -> tuple[str, str]:
    tmp_path.mkdir()
    script = tmp_path / "bar.py"
    script.write_text(textwrap.dedent(BAR_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DURABLE_PROGRESS", None)
    cmd = [sys.executable, str(script), str(tmp_path / "store")]
    if not stderr_tty:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        return out.stdout, out.stderr
    return on_a_terminal(cmd, env)


def test_progress_bar_is_drawn_on_a_terminal_only(tmp_path: Path) -> None:
    stdout, stderr = _run_bar_script(tmp_path / "tty", stderr_tty=True)
    assert stdout.strip() == "600"
    assert "loop_over(double): 100%" in stderr  # tqdm's text bar
    assert "25/25" in stderr
    stdout, stderr = _run_bar_script(tmp_path / "pipe", stderr_tty=False)
    assert stdout.strip() == "600"
    assert stderr == ""  # not a terminal: nothing drawn


def test_a_failed_block_shows_in_history_as_a_loop_and_keeps_its_failed_tries(
    tmp_path: Path,
) -> None:
    log = str(tmp_path / "log")
    items = [(log, i) for i in range(5)]
    store = durable.open_store(str(tmp_path / "store"))

    @durable.workflow(store=store, run_id="r1")
    def fan(items: list[tuple[str, int]]) -> list[str]:
        return durable.loop_over(picky, items)

    for bad in ("3", "1"):
        Path(log + ".fail").write_text(bad)
        with pytest.raises(ValueError) as caught:
            fan(items)
        note = f"durable: item {bad} (of 5) of loop_over(picky) failed"
        if sys.version_info >= (3, 11):
            assert (str(caught.value), caught.value.__notes__) == (f"item {bad} refused", [note])
        else:
            assert str(caught.value) == f"item {bad} refused [{note}]"
    (failed,) = fan.history("r1")[1:]
    assert (failed.position, failed.kind, failed.name, failed.status) == (
        0, "loop", "loop_over(picky)", "failed",
    )  # fmt: skip
    assert failed.attempts == 2 and failed.started is not None
    assert failed.error is not None and failed.error.startswith("ValueError: item 1 refused")

    Path(log + ".fail").unlink()
    assert fan(items) == [expected(i) for i in range(5)]
    (done,) = fan.history("r1")[1:]
    assert (done.kind, done.name, done.status, done.attempts) == (
        "loop", "loop_over(picky)", "completed", 3,
    )  # fmt: skip
    # Python 3.10 has no exception notes: the item is named in the message
    # itself (README, "Failures"); 3.11+ keep the message and add a note.
    named = " [durable: item {} (of 5) of loop_over(picky) failed]"
    if sys.version_info >= (3, 11):
        named = ""
    assert [f.message for f in done.failures] == [
        "item 3 refused" + named.format(3), "item 1 refused" + named.format(1),
    ]  # fmt: skip
    assert sorted(logged(log)) == [0, 0, 0, 1, 1, 2, 2, 3, 4]  # nothing kept between tries


def _touch(path: str) -> str:
    Path(path).write_text("made")
    return durable.artifact(path)


def test_registrations_by_items_of_a_loop_over_inside_a_step(tmp_path: Path) -> None:
    # What the README says: in the step's own thread they count for the
    # enclosing step; on a pool inside a step, nothing; a block in the workflow
    # body records them itself (review65).
    paths = [str(tmp_path / f"f{i}") for i in range(2)]

    @durable.step
    def inline_outer() -> list[str]:
        return durable.loop_over(_touch, paths)

    @durable.step
    def pooled_outer() -> list[str]:
        with cf.ThreadPoolExecutor(2) as pool:
            return durable.loop_over(_touch, paths, executor=pool)

    @durable.workflow(store=str(tmp_path / "store"), run_id="r1")
    def flow() -> None:
        inline_outer()
        pooled_outer()
        durable.loop_over(_touch, paths)

    flow()
    inline, pooled, block = flow.history("r1")[1:]
    assert sorted(Path(a["url"]).name for a in inline.artifacts) == ["f0", "f1"]
    assert (pooled.artifacts, block.kind) == ((), "loop")
    assert sorted(Path(a["url"]).name for a in block.artifacts) == ["f0", "f1"]


def test_redacted_items_stay_in_memory_and_are_refused_by_other_processes(
    tmp_path: Path, process_pool: Any
) -> None:
    secrets = [durable.redact("s3cret"), durable.redact("pw")]
    store = str(tmp_path / "store")

    @durable.workflow(store=store, run_id="r1")
    def lengths() -> list[int]:
        with cf.ThreadPoolExecutor(2) as pool:
            return durable.loop_over(lambda s: len(s.value), secrets, executor=pool)

    assert lengths() == [6, 2]

    @durable.workflow(store=store, run_id="r2")
    def sent() -> list[str]:
        return durable.loop_over(work, secrets, executor=process_pool)

    with pytest.raises(TypeError, match="never written"):  # pickling the item to send it
        sent()

    @durable.workflow(store=store, run_id="r3")
    def kept() -> list[Any]:
        return durable.loop_over(lambda s: s, secrets)

    with pytest.raises(durable.SerializationError, match="loop_over"):
        kept()
    assert kept.history("r3")[1:] == []
