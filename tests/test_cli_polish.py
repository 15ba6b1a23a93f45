"""The command line, polished (issue 14, item 6), in child processes:
--version, run --wait, flags in errors, a line per operation, the
fingerprint in `runs`, one line per step in `show`, gc --keep-last counting
completed runs only."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import durable as durable_lib
from durable.testing import fake_clock

from .clikit import (
    ALL_STEPS,
    PIPELINE_RESULT,
    child_env,
    counts,
    durable,
    read_until,
    runs_json,
    spawn,
    write_flow,
)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    return tmp_path


def test_version(tmp: Path) -> None:
    done = durable(tmp, "--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"durable {durable_lib.__version__}"


def operation_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.startswith("  [")]


def untimed(lines: list[str]) -> list[str]:
    """The lines without the duration a loaded machine may give a trivial
    operation (a sleep(0)'s fsync took 105 ms): which durations are shown
    is `test_an_operation_line_shows_a_duration_from_a_tenth_of_a_second`'s."""
    return [re.sub(r" in \S+$", "", line) for line in lines]


def test_an_operation_line_shows_a_duration_from_a_tenth_of_a_second() -> None:
    from durable._cli.run import operation_line
    from durable.events import StepExecuted, StepReplayed

    def line(kind: type[StepExecuted | StepReplayed], took: float, what: str = "step") -> str:
        return operation_line(kind("r", "wf", position="2", name="s3", duration=took, kind=what))

    assert line(StepExecuted, 0.002) == "  [2] s3 executed"  # a trivial step's 2 ms: noise
    assert line(StepExecuted, 0.0999, "sleep") == "  [2] s3 (sleep) executed"
    assert line(StepExecuted, 0.1) == "  [2] s3 executed in 100ms"
    assert line(StepExecuted, 1.5, "loop") == "  [2] s3 (loop) executed in 1.50s"
    assert line(StepReplayed, 3.0) == "  [2] s3 replayed"  # a replay's time is no step's


def test_run_prints_a_line_per_operation_as_it_executes_or_replays(tmp: Path) -> None:
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    lines = operation_lines(done.stderr)
    assert untimed(lines) == [f"[{i}] s{i + 1} executed" for i in range(5)]
    # printed as the run went, before the outcome
    assert done.stderr.index("[4] s5") < done.stderr.index("run r1 completed")

    failed = durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=1")
    assert failed.returncode == 1
    assert [line.split(" in ")[0] for line in operation_lines(failed.stderr)] == [
        "[0] s1 executed"
    ]
    again = durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--resume")
    assert again.returncode == 1
    assert operation_lines(again.stderr) == ["[0] s1 replayed"]
    assert counts(tmp) == {**ALL_STEPS, "s1": 2, "explode": 2}


def test_a_sleep_and_a_completed_run_print_their_kind(tmp: Path) -> None:
    (tmp / "nap.py").write_text(
        "import time\nimport durable\n\n@durable.step\ndef slow():\n"
        "    time.sleep(0.15)  # the work: long enough for its duration to be shown\n"
        "    return 1\n\n"
        "@durable.workflow\ndef nap() -> int:\n    durable.sleep(0)\n    return slow()\n"
    )
    done = durable(tmp, "run", "nap.py:nap", "--run-id", "n1")
    assert done.returncode == 0, done.stderr
    first, second = operation_lines(done.stderr)
    assert untimed([first]) == ["[0] sleep (sleep) executed"]
    assert re.fullmatch(r"\[1\] slow executed in \d+ms", second), second


@pytest.mark.slow
def test_run_wait_waits_for_a_held_run(tmp: Path) -> None:
    env = child_env(tmp, FLOW_BLOCK_AT="3")
    holder = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "w1", "--var", "n=1", env=env)
    try:
        read_until(holder.stdout, "step 3 started")
        refused = durable(tmp, "run", "flow.py:pipeline", "--run-id", "w1", "--resume")
        assert refused.returncode == 2
        assert "--wait SECONDS" in refused.stderr and "with_options" not in refused.stderr
        short = durable(tmp, "run", "flow.py:pipeline", "--run-id", "w1", "--wait", "0.2")
        assert short.returncode == 2 and "is being executed by pid" in short.stderr
        waiter = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "w1", "--resume",
                       "--wait", "120", env=child_env(tmp))  # fmt: skip
        assert holder.stdin is not None
        holder.stdin.write(b"go\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
        out, err = waiter.communicate(timeout=120)
        assert waiter.returncode == 0, err.decode()
        assert out.decode().strip() == str(PIPELINE_RESULT)
        assert "already completed" in err.decode()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert counts(tmp) == ALL_STEPS  # the waiter executed nothing


@pytest.mark.parametrize(
    ("args", "says", "never"),
    [
        (["gc"], "--keep-last N, --older-than AGE or --status", "keep_last"),
        (["gc", "--keep-last", "-1"], "argument --keep-last", "keep_last"),
        (["run", "flow.py:pipeline", "--wait", "soon"], "argument --wait", "wait="),
        (["run", "flow.py:pipeline", "--run-id", "ghost", "--resume"], "--resume", "resume()"),
    ],
)
def test_errors_name_flags(tmp: Path, args: list[str], says: str, never: str) -> None:
    done = durable(tmp, *args)
    assert done.returncode == 2
    assert says in done.stderr and never not in done.stderr
    assert counts(tmp) == {}


def test_fork_errors_name_flags(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "src", "--var", "n=1").returncode == 0
    far = durable(tmp, "fork", "src", "--at", "9")
    assert far.returncode == 2 and "(--at) must be between 0 and 5" in far.stderr
    assert "at=" not in far.stderr
    assert durable(tmp, "fork", "src", "--at", "1", "--new-run-id", "b").returncode == 0
    taken = durable(tmp, "fork", "src", "--at", "1", "--new-run-id", "b")
    assert taken.returncode == 2 and "--new-run-id" in taken.stderr
    assert "new_run_id" not in taken.stderr


def test_runs_shows_the_fingerprint(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    fingerprint = runs_json(tmp)[0]["fingerprint"]
    assert re.fullmatch(r"[0-9a-f]{12,}", fingerprint)
    table = durable(tmp, "runs").stdout.splitlines()
    assert table[0].split() == ["WORKFLOW", "RUN", "ID", "STATUS", "STEPS", "FINGERPRINT", "UPDATED"]
    assert table[1].split()[4] == fingerprint[:12]


FRAMES = """
import durable
import pandas as pd


@durable.step
def frame(n):
    return pd.DataFrame({"a": range(n), "b": [x * 2.5 for x in range(n)]})


@durable.step
def text():
    return "line one\\nline two\\n" + "x" * 300


@durable.workflow
def frames(n: int) -> int:
    return len(frame(n)) + len(text())
"""


def test_show_keeps_one_line_per_step_whatever_the_repr(tmp: Path) -> None:
    pytest.importorskip("pandas")
    write_flow(tmp, FRAMES, "frames.py")
    assert durable(tmp, "run", "frames.py:frames", "--run-id", "f1", "--var", "n=40").returncode == 0
    shown = durable(tmp, "show", "f1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    body = lines[lines.index(next(line for line in lines if line.startswith("POS"))) :]
    assert [line.split()[2] for line in body[1:]] == ["frame", "text"]  # one row each
    assert all(len(line) < 200 for line in body)
    assert body[1].split(None, 6)[6].startswith("a b 0 0 0.0 1")  # the frame's repr, collapsed
    assert "'line one\\nline two" in body[2]


def test_gc_keep_last_counts_completed_runs_not_an_unexecuted_fork(tmp: Path) -> None:
    store = durable_lib.open_store(tmp / "store")
    flow = durable_lib.workflow(name="pipeline", store=store)(_double)
    start = time.time() - 3600
    for k, rid in enumerate(["r1", "r2", "r3"]):
        with fake_clock(start=start + 60 * k):
            flow.with_options(run_id=rid)(1)
    assert durable(tmp, "fork", "r3", "--at", "0", "--new-run-id", "branch").returncode == 0
    newest = runs_json(tmp)[0]
    assert (newest["runId"], newest["status"]) == ("branch", "forked")
    gone = durable(tmp, "gc", "--keep-last", "2")
    assert gone.returncode == 0, gone.stderr
    assert "removed 1 run" in gone.stderr
    assert {r["runId"] for r in runs_json(tmp)} == {"branch", "r3", "r2"}


def _double(n: int) -> int:
    return n * 2


def timeline_rows(tmp: Path, run_id: str) -> list[str]:
    """The timeline's rows in page order: a step's name, or `resume:<how the
    attempt before ended>` for the break before a resumed attempt."""
    done = durable(tmp, "show", run_id, "--html", "t.html")
    assert done.returncode == 0, done.stderr
    text = (tmp / "t.html").read_text()
    found = re.findall(r'class="row (?:step" data-position="\S+" data-name="(\w+)|resume" '
                       r'data-resumed-at="[\d.]+" data-before="(\w+)")', text)  # fmt: skip
    return [name or f"resume:{before}" for name, before in found]


def test_the_timeline_labels_where_a_failed_run_resumed(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=1").returncode == 1
    assert timeline_rows(tmp, "b1") == ["s1", "explode"]
    assert durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--resume").returncode == 1
    assert timeline_rows(tmp, "b1") == ["s1", "resume:failed", "explode"]
    assert "failed here · resumed" in (tmp / "t.html").read_text()
    assert counts(tmp) == {"s1": 1, "explode": 2}


@pytest.mark.slow
def test_the_timeline_labels_where_a_killed_run_resumed(tmp: Path) -> None:
    env = child_env(tmp, FLOW_BLOCK_AT="3")
    child = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--var", "n=1", env=env)
    try:
        read_until(child.stdout, "step 3 started")
    finally:
        child.kill()  # SIGKILL: no status written, the manifest still says running
        child.wait()
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--resume")
    assert done.returncode == 0, done.stderr
    lines = operation_lines(done.stderr)
    assert lines[:2] == ["[0] s1 replayed", "[1] s2 replayed"]
    assert lines[2].startswith("[2] s3 executed")
    assert timeline_rows(tmp, "k1") == ["s1", "s2", "resume:interrupted", "s3", "s4", "s5"]
    assert counts(tmp) == {**ALL_STEPS, "s3": 2}  # s3 was under way when killed


def test_every_python_phrase_the_cli_rewrites_is_still_in_its_error() -> None:
    from durable._cli.common import _FLAGS, in_flags

    errors = [
        durable_lib.RunLockedError("r", "pid 1 on host", 0.0, 0.0),
        durable_lib.RunNotFoundError("w", "r", "store", resuming=True),  # only a resume is told to start it
        durable_lib.CorruptRecordError("r", 3, "w/r/log", "bad checksum"),
        durable_lib.NondeterminismError("r", 3, "a", "b"),
    ]
    texts = [str(e) for e in errors]
    for python in list(_FLAGS)[:4]:  # the fork phrases: test_fork_errors_name_flags
        assert any(python in text for text in texts), python
    assert all("=" not in in_flags(text).replace("==", "") for text in texts[:2])
    waited = str(durable_lib.RunLockedError("r", "pid 1 on host", 0.0, 0.0, waited=2.0))
    assert list(_FLAGS)[-1] in waited and "=" not in in_flags(waited)


def test_durable_own_modules_are_never_followed_as_the_users_code() -> None:
    """A step that calls `durable.suspend()` must fingerprint the same under
    `durable run` (which watches the run) as under `python script.py`
    (test_names.py): durable's modules, and the callbacks their lists hold,
    are library code, not helpers of the user's."""
    from durable._api import workflow
    from durable._cli import run
    from durable._core import events
    from durable._fingerprint.userfiles import is_user_file

    for module in (events, run, workflow):
        assert not is_user_file(module.__file__ or "", "durable"), module.__name__


LOOP_FLOW = '''
import os
import sys

import durable


def work(i):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(f"item{i}\\n")
    if i == 3 and os.environ.get("FLOW_BLOCK_AT") == "3":
        print("item 3 started", flush=True)
        sys.stdin.readline()
    return i * 10


@durable.step
def prep():
    return 5


@durable.workflow(run_id="loop")
def looping():
    return durable.loop_over(work, range(prep()), checkpoint_items=True)
'''


def loop_line(tmp: Path) -> tuple[str, ...]:
    """(kind, name, status, output) of position 1 in `durable show loop`."""
    shown = durable(tmp, "show", "loop")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line.split() for line in shown.stdout.splitlines() if line.startswith("1 ")]
    return (*line[1:4], " ".join(line[-3:]))


def test_show_lists_the_checkpointed_items_of_a_loop_still_running(tmp_path: Path) -> None:
    write_flow(tmp_path, LOOP_FLOW)
    child = spawn(tmp_path, "run", "flow.py:looping", env=child_env(tmp_path, FLOW_BLOCK_AT="3"))
    try:
        read_until(child.stdout, "item 3 started")
        running = ("loop", "loop_over(work)", "running", "3 items checkpointed")
        assert loop_line(tmp_path) == running
    finally:
        child.kill()  # a real kill -9 in the middle of the loop
        child.wait()
    assert loop_line(tmp_path)[2] == "interrupted"
    resumed = durable(tmp_path, "run", "flow.py:looping", "--resume", env=child_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    # Items 0-2 were checkpointed: only 3 and 4 ran again, item 3 for the second time.
    assert counts(tmp_path) == {"item0": 1, "item1": 1, "item2": 1, "item3": 2, "item4": 1}
    assert loop_line(tmp_path)[:3] == ("loop", "loop_over(work)", "completed")
