"""The 40th new-user walk, through the Python API: what a stopped run says
of itself."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

import durable

ran: list[str] = []


@pytest.fixture(autouse=True)
def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    ran.clear()


@durable.step
def first(n: int) -> int:
    ran.append("first")
    durable.request_stop()  # as Ctrl-C under stop_on_signals() does, mid-step
    return n + 1


@durable.step
def second(n: int) -> int:
    ran.append("second")
    return n * 2


@durable.workflow
def stops(n: int = 1) -> int:
    return second(first(n))


def test_a_stopped_run_says_what_stopped_it_not_its_exit_code() -> None:
    """Before: `durable show` said `error  Stopped: 130`, and so did
    RunInfo.error and the traceback's last line (`durable.errors.Stopped: 130`)."""
    try:
        with pytest.raises(durable.Stopped) as e:
            stops.with_options(run_id="s1")()
    finally:
        durable.clear_stop()
    assert e.value.code == 130  # the exit code a shell sees stays
    assert str(e.value) == "stopped by request_stop() (exit code 130)"
    (info,) = stops.runs()
    assert (info.status, info.error) == ("interrupted", f"Stopped: {e.value}")
    assert stops.resume("s1").value == 4
    assert ran == ["first", "second"]
    by_signal = str(durable.Stopped(signal.SIGTERM))
    assert by_signal == "stopped by SIGTERM (exit code 143)"


@durable.step
def typed_at(n: int) -> int:
    ran.append("typed_at")
    if len(ran) == 1:
        raise KeyboardInterrupt  # Ctrl-C in a notebook cell, landing in the step
    return n


@durable.workflow
def interrupted(n: int = 1) -> int:
    return typed_at(n)


def test_an_interrupted_runs_error_is_not_a_type_and_a_dangling_colon() -> None:
    """Before: `KeyboardInterrupt: ` (the exception has no message), in
    RunInfo.error and `durable show`'s error line."""
    with pytest.raises(KeyboardInterrupt):
        interrupted.with_options(run_id="k1")()
    (info,) = interrupted.runs()
    assert (info.status, info.error) == ("interrupted", "KeyboardInterrupt")
    assert interrupted.resume("k1").value == 1
    assert ran == ["typed_at", "typed_at"]
