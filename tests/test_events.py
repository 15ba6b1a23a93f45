"""The event stream and its logging consumer: which events a fresh run, a
resume, a retry and a replayed run emit, in which order; a failing callback
never breaks a run; the `durable` logger's messages (caplog, and
`DURABLE_LOG=info` in a real process); the note on an interrupted run."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import durable
from durable import events
from durable._core import events as stream
from durable.testing import fake_clock

from .clikit import read_until

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import durable

    def bump(name):
        with open(os.environ["COUNTS"], "a") as f:
            f.write(name + "\\n")

    @durable.step
    def fetch(n):
        bump("fetch")
        return n + 1

    @durable.step
    def train(n):
        bump("train")
        if os.environ.get("FAIL") == "1":
            raise RuntimeError("out of memory")
        if os.environ.get("BLOCK") == "1":
            print("train started", flush=True)
            sys.stdin.readline()
        return n * 2

    @durable.workflow
    def pipeline(n: int) -> int:
        return train(fetch(n))

    print(pipeline(int(sys.argv[1])))
    """
)


def _names(seen: list[events.Event]) -> list[str]:
    return [type(e).__name__ for e in seen]


def _flow(store: durable.Store, counts: list[str], fail: list[bool]) -> Any:
    @durable.step
    def fetch(n: int) -> int:
        counts.append("fetch")
        return n + 1

    @durable.step
    def train(n: int) -> int:
        counts.append("train")
        if fail and fail.pop():
            raise RuntimeError("out of memory")
        return n * 2

    @durable.workflow(store=store, name="pipe")
    def pipeline(n: int) -> int:
        return train(fetch(n))

    return pipeline


def test_a_fresh_run_then_a_resume_emit_what_happened(store: durable.Store) -> None:
    counts: list[str] = []
    flow = _flow(store, counts, [True])
    seen: list[events.Event] = []
    with durable.on_event(seen.append):
        with pytest.raises(RuntimeError):
            flow(1)
        assert _names(seen) == ["RunStarted", "StepExecuted", "StepFailed", "RunFailed"]
        first = seen[0]
        assert isinstance(first, events.RunStarted)
        assert (first.resumed, first.replayed, first.resume_position) == (False, 0, None)
        seen.clear()
        assert flow(1) == 4
    assert counts == ["fetch", "train", "train"]
    assert _names(seen) == ["RunStarted", "StepReplayed", "StepExecuted", "RunCompleted"]
    start, replay, ran, done = seen
    assert isinstance(start, events.RunStarted)
    assert (start.resumed, start.replayed, start.resume_position) == (True, 1, 1)
    assert isinstance(replay, events.StepReplayed) and (replay.position, replay.name) == (
        "0",
        "_flow.fetch",
    )
    assert isinstance(ran, events.StepExecuted) and ran.name == "_flow.train" and ran.attempt == 1
    assert isinstance(done, events.RunCompleted) and (done.replayed, done.executed) == (1, 1)
    assert {e.run_id for e in seen} == {start.run_id}


def test_a_retry_is_an_event_and_the_handle_unsubscribes(store: durable.Store) -> None:
    tries: list[int] = []

    @durable.step(retries=2, retry_delay=0)
    def flaky() -> int:
        tries.append(1)
        if len(tries) < 3:
            raise ValueError(f"try {len(tries)}")
        return len(tries)

    @durable.workflow(store=store)
    def wf() -> int:
        return flaky()

    seen: list[events.Event] = []
    handle = durable.on_event(seen.append)
    assert wf() == 3
    handle.close()
    handle.close()  # twice is harmless
    retried = [e for e in seen if isinstance(e, events.StepRetried)]
    assert [(e.attempt, e.error) for e in retried] == [
        (0, "ValueError: try 1"),
        (1, "ValueError: try 2"),
    ]
    executed = [e for e in seen if isinstance(e, events.StepExecuted)]
    assert [e.attempt for e in executed] == [2]
    seen.clear()
    assert wf() == 3  # completed before: the recorded result, and no event reaches seen
    assert seen == [] and len(tries) == 3


def test_a_retry_is_logged_at_warning_when_the_logger_shows_info(
    store: durable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    # DURABLE_LOG=info (or an application's logging at INFO or WARNING)
    # showed no retry: the event was built only when DEBUG was on.
    tries: list[int] = []

    @durable.step(retries=1, retry_delay=0.01)
    def flaky() -> int:
        tries.append(1)
        if len(tries) < 2:
            raise ConnectionError("bucket timed out")
        return len(tries)

    @durable.workflow(store=store, run_id="r")
    def wf() -> int:
        return flaky()

    with caplog.at_level(logging.INFO, logger="durable"):
        assert wf() == 2
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "run r: step 0 'test_a_retry_is_logged_at_warning_when_the_logger_shows_info.flaky'"
        " failed on try 1 of 2 (ConnectionError: bucket timed out); retrying in 10ms"
    ]


def test_a_loop_over_items_retry_is_logged_too(
    store: durable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    # An item's failed try that another followed said nothing at any level.
    tries: list[int] = []

    @durable.step(retries=1, retry_delay=1.5)
    def item(i: int) -> int:
        tries.append(i)
        if tries.count(i) == 1 and i == 1:
            raise ConnectionError("bucket timed out")
        return i

    @durable.workflow(store=store, run_id="r")
    def wf() -> list[int]:
        return durable.loop_over(item, range(3), name="items")

    with fake_clock(), caplog.at_level(logging.INFO, logger="durable"):
        assert wf() == [0, 1, 2]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "run r: loop 0 'items item 1' failed on try 1 of 2 (ConnectionError: bucket timed out);"
        " retrying in 1.50s"
    ]


def test_a_failing_callback_is_logged_once_and_never_breaks_a_run(
    store: durable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(event: events.Event) -> None:
        calls.append(type(event).__name__)
        raise KeyError("observer bug")

    counts: list[str] = []
    flow = _flow(store, counts, [])
    with caplog.at_level(logging.WARNING, logger="durable"), durable.on_event(broken):
        with pytest.warns(RuntimeWarning, match="event callback"):
            assert flow(5) == 12
        assert flow.with_options(restart=True)(5) == 12
    assert calls == ["RunStarted"]  # ignored after the first failure
    warnings = [r for r in caplog.records if "event callback" in r.getMessage()]
    assert len(warnings) == 1 and "KeyError" in (warnings[0].exc_text or "")
    assert counts == ["fetch", "train", "fetch", "train"]


def test_a_failing_callback_is_warned_about_once_without_a_log_handler(
    store: durable.Store,
) -> None:
    """The `durable` logger has only a NullHandler unless the program set one
    up: a callback that raised was ignored from then on without a word, so a
    dashboard fed by it stopped with nothing to say why."""

    def breaks() -> Any:
        def broken(event: events.Event) -> None:
            raise KeyError("observer bug")

        return broken

    flow = _flow(store, [], [])
    broken = breaks()
    with durable.on_event(broken), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert flow(5) == 12
        assert flow.with_options(restart=True)(5) == 12
    said = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "raised KeyError: 'observer bug' on RunStarted" in said[0]
    with durable.on_event(breaks()), warnings.catch_warnings():
        warnings.simplefilter("error")  # python -W error: the run still goes on
        assert flow.with_options(restart=True)(5) == 12


def test_nobody_listening_means_no_operation_events_are_built() -> None:
    assert not stream.detailed()  # only the logging consumer, and it wants no DEBUG
    with durable.on_event(lambda e: None):
        assert stream.detailed()
    assert not stream.detailed()


def test_log_messages_of_a_fresh_run_and_a_resume(
    store: durable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    counts: list[str] = []
    flow = _flow(store, counts, [True])
    with caplog.at_level(logging.DEBUG, logger="durable"):
        with pytest.raises(RuntimeError):
            flow(7)
        first = [r.getMessage() for r in caplog.records if r.name == "durable"]
        caplog.clear()
        run = flow.run(7)
        second = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "durable"]
    run_id = run.run_id
    assert first[0] == f"started run {run_id} of pipe"
    assert first[-1] == (
        f"run {run_id} failed: RuntimeError: out of memory; "
        "call again with the same run id to resume"
    )
    assert second == [
        ("INFO", f"resumed run {run_id} from step 2: 1 replayed"),
        ("DEBUG", f"run {run_id}: step 0 '_flow.fetch' replayed"),
        ("DEBUG", second[2][1]),
        ("INFO", f"completed run {run_id}: 1 replayed, 1 executed"),
    ]
    assert second[2][1].startswith(f"run {run_id}: step 1 '_flow.train' executed in ")


def _script(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "flow.py"
    path.write_text(SCRIPT)
    return path, {"COUNTS": str(tmp_path / "counts.txt")}


def test_durable_log_info_shows_the_resume_on_stderr(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    path, extra = _script(tmp_path)
    env = {**child_env, **extra, "DURABLE_LOG": "info"}
    failed = subprocess.run(
        [sys.executable, str(path), "3"], env={**env, "FAIL": "1"}, capture_output=True, text=True
    )
    assert failed.returncode == 1
    assert "durable INFO started run flow.pipeline-" in failed.stderr
    assert "failed: RuntimeError: out of memory; call again with the same run id" in failed.stderr
    done = subprocess.run([sys.executable, str(path), "3"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "8\n"
    assert " from step 2: 1 replayed" in done.stderr
    assert "durable INFO resumed run flow.pipeline-" in done.stderr
    assert "completed run flow.pipeline-" in done.stderr
    lines = (tmp_path / "counts.txt").read_text().split()
    assert lines == ["fetch", "train", "train"]
    quiet = subprocess.run(
        [sys.executable, str(path), "3"], env=child_env | extra, capture_output=True, text=True
    )
    assert quiet.stderr == ""  # without DURABLE_LOG the library prints nothing


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_ending_a_run_says_how_to_resume(tmp_path: Path, child_env: dict[str, str]) -> None:
    path, extra = _script(tmp_path)
    env = {**child_env, **extra, "BLOCK": "1"}
    child = subprocess.Popen(
        [sys.executable, str(path), "4"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # As in a terminal: a test run started in the background of a script
        # ignores SIGINT, and a child inherits that (Python then installs no
        # KeyboardInterrupt handler), so Ctrl-C would never reach the run.
        preexec_fn=_default_sigint,
    )
    try:
        read_until(child.stdout, "train started")
        child.send_signal(signal.SIGINT)
        # Not `communicate()`: it closes stdin at once, and a child that sees
        # end of input before the signal (on a busy machine) finishes its step.
        child.wait(timeout=60)
        assert child.stderr is not None
        err = child.stderr.read()
    finally:
        child.kill()
        child.wait()
    text = err.decode()
    assert "KeyboardInterrupt" in text
    assert "was interrupted; call again with the same run id to resume" in text
    assert "durable: run 'flow.pipeline-" in text
    done = subprocess.run(
        [sys.executable, str(path), "4"], env=child_env | extra, capture_output=True, text=True
    )
    assert done.stdout == "10\n"
    assert (tmp_path / "counts.txt").read_text().split() == ["fetch", "train", "train"]


def test_steps_total_is_the_previous_attempts_count_or_the_fork_sources(
    store: durable.Store,
) -> None:
    counts: list[str] = []
    flow = _flow(store, counts, [])
    started: list[events.RunStarted] = []

    def keep(event: events.Event) -> None:
        if isinstance(event, events.RunStarted):
            started.append(event)

    with durable.on_event(keep):
        run = flow.run(2)
        forked = flow.fork(run.run_id, at=1, new_run_id="fork-1")
    assert forked.value == 6 and counts == ["fetch", "train", "train"]
    assert [(e.run_id, e.steps_total, e.replayed) for e in started] == [
        (run.run_id, None, 0),  # a fresh run: no total known
        ("fork-1", 2, 1),  # the source completed with two operations
    ]
    # One notion of the total: the event's, the run's and the listing's agree.
    assert forked.steps_total == 2 == flow.runs()[0].steps_total


@pytest.mark.slow
def test_a_run_left_by_a_killed_process_is_taken_over_and_says_so(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    path, extra = _script(tmp_path)
    child = subprocess.Popen(
        [sys.executable, str(path), "5"],
        env={**child_env, **extra, "BLOCK": "1"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        read_until(child.stdout, "train started")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
    env = {**child_env, **extra, "DURABLE_LOG": "info"}
    done = subprocess.run([sys.executable, str(path), "5"], env=env, capture_output=True, text=True)
    assert done.stdout == "12\n", done.stderr
    assert "durable WARNING run flow.pipeline-" in done.stderr
    assert "was left running by a process that is gone or stalled; taking it over" in done.stderr
    assert " from step 2: 1 replayed" in done.stderr
    assert (tmp_path / "counts.txt").read_text().split() == ["fetch", "train", "train"]


def test_a_rebase_is_a_warning(tmp_path: Path, child_env: dict[str, str]) -> None:
    path, extra = _script(tmp_path)
    script = path.read_text().replace(
        "print(pipeline(int(sys.argv[1])))",
        "print(pipeline.with_options(rebase=os.environ.get('REBASE') == '1')(int(sys.argv[1])))",
    )
    path.write_text(script)
    env = {**child_env, **extra, "DURABLE_LOG": "info"}
    first = subprocess.run(
        [sys.executable, str(path), "1"], env=env, capture_output=True, text=True
    )
    assert first.stdout == "4\n", first.stderr
    path.write_text(script.replace("return n * 2", "return n * 3"))
    again = subprocess.run(
        [sys.executable, str(path), "1"], env={**env, "REBASE": "1"}, capture_output=True, text=True
    )
    assert again.stdout == "4\n", again.stderr  # the recorded output, deliberately
    lines = [line for line in again.stderr.splitlines() if "durable WARNING" in line]
    assert len(lines) == 1 and "definition changed (" in lines[0]
    assert lines[0].endswith("replaying its records anyway (rebase)")
    assert (tmp_path / "counts.txt").read_text().split() == ["fetch", "train"]


def test_an_answered_wait_replayed_is_an_event_as_it_counts(store: durable.Store) -> None:
    """A resume past an answered wait_for counted it among the replayed
    (`durable run`: "4 replayed") but emitted nothing for it, so the
    command listed three replayed lines and on_event saw a gap at [1]."""

    @durable.step
    def draft(n: int) -> int:
        return n

    @durable.workflow(store=store, run_id="w")
    def review(n: int) -> int:
        first = durable.wait_for("ok") + draft(n)
        return first + durable.wait_for("again")

    with pytest.raises(durable.Suspended):
        review(1)
    with pytest.raises(durable.Suspended):
        review.resume("w", inputs={"ok": 1})
    seen: list[events.Event] = []
    with durable.on_event(seen.append):
        run = review.resume("w", inputs={"again": 2})
    replays = [(e.position, e.kind) for e in seen if isinstance(e, events.StepReplayed)]
    assert run.steps_replayed == len(replays) == 2
    assert replays == [("0", "input"), ("1", "step")]


class _Unloadable:
    """Pickles as _Unloadable(a): its __init__ takes two, so it cannot be rebuilt."""

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def __reduce__(self) -> Any:
        return (_Unloadable, (self.a,))


def test_an_answer_that_cannot_be_loaded_back_is_no_replayed_event(store: durable.Store) -> None:
    """The wait's StepReplayed was sent before its answer was loaded: an
    answer that cannot be loaded back was said replayed, then refused."""

    @durable.workflow(store=store, run_id="u")
    def asks() -> int:
        answer = durable.wait_for("ok")
        durable.suspend("after the answer")
        return int(answer.a)

    with pytest.raises(durable.Suspended):
        asks()
    with pytest.raises(durable.Suspended):
        asks.resume("u", inputs={"ok": _Unloadable(1, 1)})
    seen: list[events.Event] = []
    with durable.on_event(seen.append), pytest.raises(durable.CorruptRecordError):
        asks.resume("u")
    assert not [e for e in seen if isinstance(e, events.StepReplayed)]
