"""Edge cases found in review: each test failed before its fix."""

from __future__ import annotations

import asyncio
import resource
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable.testing import FakeClock


def factory_flow(store: durable.Store, first_model: str, fail: bool) -> Any:
    def make(model: str) -> Any:
        @durable.step
        def call(x: str) -> str:
            return f"{model}:{x}"

        return call

    first, second = make(first_model), make("large")

    @durable.workflow(name="fac", store=store, run_id="r")
    def fac() -> tuple[str, str]:
        out = (first("x"), second("y"))
        if fail:
            raise RuntimeError("stop here")
        return out

    return fac


def test_two_steps_with_one_name_are_compared_by_their_own_code(store: durable.Store) -> None:
    with pytest.raises(RuntimeError):
        factory_flow(store, "small", fail=True)()
    changed = factory_flow(store, "TINY", fail=False)
    with pytest.raises(durable.DefinitionChangedError):
        changed()
    assert changed.with_options(on_change="rerun")() == ("TINY:x", "large:y")


def test_a_refusal_leaves_the_recorded_arguments_alone(store: durable.Store) -> None:
    calls = Counter[int]()

    @durable.step(name="ok")
    def ok(x: int) -> int:
        calls[x] += 1
        return x

    @durable.step(name="flaky")
    def flaky(x: int) -> int:
        if calls[-1] == 0:
            calls[-1] += 1
            raise RuntimeError("once")
        return x * 10

    @durable.workflow(name="ra", store=store, run_id="fixed")
    def ra(x: int) -> int:
        return ok(x) + flaky(x)

    with pytest.raises(RuntimeError):
        ra(1)
    with pytest.raises(durable.DefinitionChangedError) as info:
        ra(2)
    assert info.value.position == 0 and "arguments changed" in str(info.value)
    assert ra.resume("fixed").value == 11
    assert calls[1] == 1 and calls[2] == 0


def test_restart_inherits_nothing_from_the_discarded_run(store: durable.Store) -> None:
    calls = []

    @durable.step(name="s")
    def s(x: int) -> int:
        calls.append(x)
        return x * 2

    @durable.workflow(name="rr", store=store)
    def rr(x: int, y: int = 1) -> int:
        return s(x * y)

    first = rr.with_options(run_id="r").run(21, y=2)
    assert first.value == 84
    # Without arguments there is nothing to start with: refused, and the run is kept.
    with pytest.raises(durable.ConfigurationError, match=r"needs argument\(s\) x: restart=True"):
        rr.with_options(restart=True).resume("r")
    assert rr.resume("r").value == 84 and calls == [42]
    # This call's arguments and the defaults only: y is 1 again, not the recorded 2.
    again = rr.with_options(run_id="r", restart=True).run(5)
    assert again.value == 10 and calls == [42, 5]
    over = rr.with_options(restart=True).resume("r", x=3)
    assert over.value == 6 and calls == [42, 5, 3]


def test_with_options_keeps_earlier_options(store: durable.Store) -> None:
    calls = []

    @durable.step(name="s")
    def s() -> int:
        calls.append(1)
        return len(calls)

    @durable.workflow(name="wo", store=store)
    def wo() -> int:
        return s()

    fresh = wo.with_options(restart=True).with_options(run_id="x")
    assert fresh() == 1 and fresh() == 2


@pytest.mark.parametrize("bad", ["", 7, "nul\x00byte", "bell\x07"])
def test_bad_ids_from_resume_or_a_callable_are_configuration_errors(
    store: durable.Store, bad: Any
) -> None:
    @durable.workflow(name="ids", store=store, run_id=lambda n: bad)
    def ids(n: int) -> int:
        return n

    with pytest.raises(durable.ConfigurationError, match="invalid run id"):
        ids(1)
    if isinstance(bad, str):
        with pytest.raises(durable.ConfigurationError, match="invalid run id"):
            ids.resume(bad)


def test_retry_on_accepts_a_list_and_refuses_non_exceptions(
    store: durable.Store, clock: FakeClock
) -> None:
    tries = []

    @durable.step(name="r", retries=2, retry_on=[ConnectionError, TimeoutError])  # type: ignore[arg-type]
    def r() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise TimeoutError("slow")
        return "ok"

    @durable.workflow(name="rl", store=store, run_id="r")
    def rl() -> str:
        return r()

    assert rl() == "ok" and len(tries) == 3
    with pytest.raises(durable.ConfigurationError, match="retry_on"):
        durable.step(retry_on=("nope",))(lambda: None)  # type: ignore[arg-type]


def test_lone_surrogates_round_trip_and_name_runs(store: durable.Store) -> None:
    odd = "file-\udcff.txt"

    @durable.step(name="echo")
    def echo(s: str) -> str:
        return s

    @durable.workflow(name="sur", store=store)
    def sur(s: str) -> str:
        return echo(s)

    first = sur.run(odd)
    assert first.value == odd and sur.run(odd).run_id == first.run_id


def test_persist_false_rerun_counts_as_live_work(store: durable.Store) -> None:
    state = {"fail": True}

    @durable.step(name="token", persist=False)
    def token() -> str:
        return "t"

    @durable.step(name="a")
    def a() -> int:
        return 1

    @durable.step(name="b")
    def b() -> int:
        if state["fail"]:
            state["fail"] = False
            raise RuntimeError("once")
        return 2

    @durable.workflow(name="pf", store=store, run_id="r")
    def pf() -> int:
        token()
        return a() + b()

    with pytest.raises(RuntimeError):
        pf()
    run = pf.run()
    assert (run.resumed_from_step, run.steps_replayed, run.steps_executed) == (0, 1, 2)


def test_rerun_discards_from_a_different_step_at_a_position(store: durable.Store) -> None:
    pick = {"first": True}
    calls = Counter[str]()

    @durable.step(name="alpha")
    def alpha() -> str:
        calls["alpha"] += 1
        return "a"

    @durable.step(name="beta")
    def beta() -> str:
        calls["beta"] += 1
        return "b"

    @durable.workflow(name="rn", store=store, run_id="r", on_change="rerun")
    def rn() -> str:
        v = alpha() if pick["first"] else beta()
        if pick["first"]:
            raise RuntimeError("stop")
        return v

    with pytest.raises(RuntimeError):
        rn()
    pick["first"] = False
    assert rn() == "b" and calls == {"alpha": 1, "beta": 1}


def test_asleep_does_not_block_the_event_loop(store: durable.Store, clock: FakeClock) -> None:
    @durable.workflow(name="as", store=store, run_id="r")
    async def sleepy() -> str:
        await durable.asleep(30)
        return "woke"

    assert asyncio.run(sleepy()) == "woke" and clock.slept == [30]
    assert asyncio.run(sleepy()) == "woke" and clock.slept == [30]


def test_a_run_deleted_under_a_long_lived_local_store_starts_again(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")

    @durable.workflow(name="ll", store=store, run_id="nightly")
    def ll() -> int:
        return 1

    assert ll() == 1
    durable.open_store(tmp_path / "s").delete_run("ll", "nightly")
    assert ll() == 1


def test_a_short_write_to_the_log_loses_no_later_record(tmp_path: Path) -> None:
    from durable._storage.log import RunLog

    log = RunLog(str(tmp_path / "records.log"), "r")
    log.append([("steps/00000000", b"a" * 100)])
    size = (tmp_path / "records.log").stat().st_size
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 50, old[1]))
    try:
        with pytest.raises(OSError):
            log.append([("steps/00000001", b"b" * 500)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)
    assert (tmp_path / "records.log").stat().st_size == size
    log.append([("steps/00000002", b"c")])
    assert sorted(RunLog(str(tmp_path / "records.log"), "r").load()) == [
        "steps/00000000",
        "steps/00000002",
    ]


ASYNC_NAP = """
import asyncio, durable
durable.stop_on_signals()

@durable.workflow(name="nap", run_id="a")
async def nap() -> int:
    await durable.asleep(3600)
    return 1

asyncio.run(nap())
"""

LOOP_STOP = """
import os, sys, durable
LOG = os.environ["LOG"]

@durable.step(name="item")
def item(i: int) -> int:
    with open(LOG, "a") as f:
        f.write(f"{i}\\n")
    if i == 2 and os.environ.get("HOLD"):
        print("IN2", flush=True)
        sys.stdin.readline()  # the parent signals, then lets this item finish
    return i * i

@durable.workflow(name="lp", run_id="l")
def lp() -> list:
    return durable.loop_over(item, range(8), checkpoint_items=True)

if os.environ.get("HOLD"):
    durable.stop_on_signals()
print("VALUE", lp(), flush=True)
"""


@pytest.mark.slow
def test_a_signal_ends_an_async_durable_sleep_at_once(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    import subprocess
    import sys
    import time

    script = tmp_path / "nap.py"
    script.write_text(ASYNC_NAP)
    child = subprocess.Popen([sys.executable, str(script)], env=child_env, cwd=tmp_path)
    store = durable.open_store(tmp_path / "store")
    deadline = time.monotonic() + 60
    # The timer record is written just before the pause starts: wait for it.
    while "timers/00000000" not in store.record_names("nap", "a"):
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 143  # not after the hour


@pytest.mark.slow
def test_a_signal_stops_a_checkpointed_loop_after_the_item_in_flight(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    import subprocess
    import sys

    script = tmp_path / "lp.py"
    script.write_text(LOOP_STOP)
    log = tmp_path / "log"
    env = dict(child_env, LOG=str(log))
    child = subprocess.Popen(
        [sys.executable, str(script)],
        env=dict(env, HOLD="1"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline().strip() == "IN2"
    child.send_signal(signal.SIGTERM)
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.wait(timeout=60) == 143
    assert log.read_text().split() == ["0", "1", "2"]
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"VALUE {[i * i for i in range(8)]}"
    assert [int(x) for x in log.read_text().split()] == list(range(8))
