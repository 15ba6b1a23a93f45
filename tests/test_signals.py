"""Graceful stop: the step in flight finishes and is recorded, the run is
marked interrupted, the process exits 128 + signal; a second signal, or a
signal during a durable sleep, stops at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import durable as durable_lib
from durable._core import plan

from .clikit import (
    PIPELINE_RESULT,
    child_env,
    counts,
    durable,
    read_until,
    show_json,
    spawn,
    write_flow,
)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    return tmp_path


def _start_blocked_at_3(tmp: Path) -> subprocess.Popen[bytes]:
    env = child_env(tmp, FLOW_BLOCK_AT="3")
    child = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "g1", "--var", "n=1", env=env)
    read_until(child.stdout, "step 3 started")
    return child


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_step_in_flight_finishes_and_is_recorded(tmp: Path, signum: int, code: int) -> None:
    child = _start_blocked_at_3(tmp)
    try:
        child.send_signal(signum)
        read_until(child.stderr, "finishing the step in flight")  # the handler has run
        child.stdin.write(b"go\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        assert child.wait(timeout=60) == code
    finally:
        child.kill()
        child.wait()
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 1}
    doc = show_json(tmp, "g1")
    assert doc["status"] == "interrupted"
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [
        ("s1", "completed"), ("s2", "completed"), ("s3", "completed"),
    ]  # fmt: skip
    assert doc["steps"][2]["outputPreview"] == str((1 + 1) * 2 + 10)
    # the lease was released: resuming needs no takeover, and runs only s4 and s5
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "g1", "--resume")
    assert done.returncode == 0, done.stderr
    assert "Resumed from step 4" in done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1}


@pytest.mark.slow
def test_a_second_signal_stops_at_once(tmp: Path) -> None:
    child = _start_blocked_at_3(tmp)
    try:
        child.send_signal(signal.SIGTERM)
        read_until(child.stderr, "finishing the step in flight")
        child.send_signal(signal.SIGTERM)  # the step never gets its "go"
        assert child.wait(timeout=60) == 143
    finally:
        child.kill()
        child.wait()
    doc = show_json(tmp, "g1")
    assert doc["status"] == "interrupted"
    assert [s["name"] for s in doc["steps"]] == ["s1", "s2"]  # s3 was cut short: no record
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "g1", "--resume")
    assert done.returncode == 0 and "Resumed from step 3" in done.stderr
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 2, "s4": 1, "s5": 1}


@pytest.mark.slow
def test_a_signal_during_a_durable_sleep_stops_at_once(tmp: Path) -> None:
    child = spawn(tmp, "run", "flow.py:napping", "--run-id", "z1", "--var", "n=1", env=child_env(tmp))
    try:
        wait_for_timer(tmp, child)
        child.send_signal(signal.SIGTERM)  # the hour-long sleep has begun
        assert child.wait(timeout=60) == 143
    finally:
        child.kill()
        child.wait()
    doc = show_json(tmp, "z1")
    assert doc["status"] == "interrupted"
    assert [(s["kind"], s["status"]) for s in doc["steps"]] == [
        ("step", "completed"), ("sleep", "pending"),
    ]  # fmt: skip
    assert counts(tmp) == {"s1": 1}


def wait_for_timer(tmp: Path, child: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Wait for the child to record the durable sleep's wake-up time (the
    record is written just before the sleep starts)."""
    store = durable_lib.open_store(tmp / "store")
    deadline = time.monotonic() + timeout
    while "timers/00000001" not in store.record_names("flow.napping", "z1"):
        assert child.poll() is None, "the child exited early"
        assert time.monotonic() < deadline, "the sleep never started"
        time.sleep(0.01)


STOPPABLE = """
import os, sys
import durable
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow import pipeline

durable.stop_on_signals()
pipeline.with_options(run_id="own")(1)
print("not reached")
"""


@pytest.mark.slow
def test_stop_on_signals_in_user_code(tmp: Path) -> None:
    write_flow(tmp, STOPPABLE, name="script.py")
    child = subprocess.Popen(
        [sys.executable, "script.py"], cwd=tmp, env=child_env(tmp, FLOW_BLOCK_AT="2"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        read_until(child.stdout, "step 2 started")
        child.send_signal(signal.SIGINT)
        read_until(child.stderr, "finishing the step in flight")
        child.stdin.write(b"go\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        assert child.wait(timeout=60) == 130
        assert b"Traceback" not in child.stderr.read()  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait()
    doc = show_json(tmp, "own")
    assert doc["status"] == "interrupted" and doc["completedSteps"] == 2
    assert counts(tmp) == {"s1": 1, "s2": 1}


def test_restore_puts_the_previous_handlers_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with durable_lib.stop_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before
        plan.request_stop(signal.SIGTERM)  # as if a signal had arrived
        with pytest.raises(durable_lib.Stopped) as stopped:
            plan.check_stop()
        assert stopped.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is before
    assert plan.stop.signum is None and not plan.stop.requested
    plan.check_stop()  # nothing pending any more


def test_stop_on_signals_needs_the_main_thread() -> None:
    errors: list[BaseException] = []

    def install() -> None:
        try:
            durable_lib.stop_on_signals()
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=install)
    worker.start()
    worker.join()
    assert len(errors) == 1 and isinstance(errors[0], durable_lib.ConfigurationError)


def test_restore_after_a_handler_installed_from_c() -> None:
    # faulthandler installs its SIGABRT handler in C before `signal` looks:
    # Python knows it as None, which `signal.signal` does not take back.
    script = (
        "import signal, durable\n"
        "assert signal.getsignal(signal.SIGABRT) is None\n"
        "with durable.stop_on_signals([signal.SIGABRT, signal.SIGTERM]):\n"
        "    pass\n"
        "print([signal.getsignal(s) == signal.SIG_DFL for s in (signal.SIGABRT, signal.SIGTERM)])\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", script], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True]"  # both restored, the first to its default
