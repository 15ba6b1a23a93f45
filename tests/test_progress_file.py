"""Issue 15, item 4: the progress file, the `durable show --json` document
rewritten atomically after each operation, read by a process that does not
import durable."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._cli.main import main
from durable._core import events

FLOW = """
import os, sys
import durable

LOG = os.environ["LOG"]

@durable.step
def fetch() -> list[str]:
    open(LOG, "a").write("fetch\\n")
    return ["a", "b"]

@durable.step
def summarize(items: list[str]) -> str:
    print("HOLD", flush=True)
    sys.stdin.readline()  # the parent reads the progress file meanwhile
    open(LOG, "a").write("summarize\\n")
    return ", ".join(items)

@durable.step
def publish(text: str) -> int:
    open(LOG, "a").write("publish\\n")
    return len(text)

@durable.workflow(run_id="p1")
def release() -> int:
    return publish(summarize(fetch()))

print("VALUE", release(), flush=True)
"""

# A reader that knows nothing of durable: `-I` ignores PYTHONPATH and the
# environment, so it could not import durable even if it tried.
READ = """
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
print(json.dumps(doc))
"""


def read_outside(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-I", "-c", READ, str(path)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def summary(doc: dict[str, Any]) -> tuple[Any, ...]:
    steps = [(s["position"], s["name"], s["status"]) for s in doc["steps"]]
    return doc["schema"], doc["status"], doc["completedSteps"], doc["currentStep"], steps


@pytest.mark.slow
def test_another_process_follows_the_run_through_the_file(
    tmp_path: Path, child_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    script, log, progress = tmp_path / "flow.py", tmp_path / "log", tmp_path / "progress.json"
    script.write_text(FLOW)
    env = dict(child_env, LOG=str(log), DURABLE_PROGRESS_FILE=str(progress))
    child = subprocess.Popen(
        [sys.executable, str(script)], env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "HOLD"  # inside step 1: step 0 is recorded
    during = read_outside(progress)
    assert summary(during) == (1, "running", 1, 1, [(0, "fetch", "completed")])
    assert during["workflow"] == "flow.release" and during["runId"] == "p1"
    child.stdin.write("\n")
    child.stdin.flush()
    out, _ = child.communicate(timeout=120)
    assert out.split() == ["VALUE", "4"] and child.returncode == 0
    after = read_outside(progress)
    assert summary(after) == (1, "completed", 3, None, [
        (0, "fetch", "completed"), (1, "summarize", "completed"), (2, "publish", "completed"),
    ])  # fmt: skip
    assert after["stepsTotal"] == 3
    assert log.read_text().split() == ["fetch", "summarize", "publish"]
    # The same builder as `durable show --json`: the very same document.
    assert main(["--store", str(tmp_path / "store"), "show", "p1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == after
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


def test_the_option_writes_each_state_and_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    progress, elsewhere = tmp_path / "mine.json", tmp_path / "env.json"
    monkeypatch.setenv("DURABLE_PROGRESS_FILE", str(elsewhere))
    seen: list[tuple[str, int]] = []
    calls: Counter[str] = Counter()

    @durable.step
    def draft() -> str:
        calls["draft"] += 1
        doc = json.loads(progress.read_text())
        seen.append((doc["status"], doc["completedSteps"]))  # as of before this step
        return "text"

    @durable.workflow(name="approval", store=str(tmp_path / "s"), run_id="a")
    def approval(decision: str | None = None) -> str:
        text = draft()
        if decision is None:
            durable.suspend("waiting for a decision")
        return f"{text}: {decision}"

    mine = approval.with_options(progress_file=progress)
    with pytest.raises(durable.Suspended):
        mine()
    doc = json.loads(progress.read_text())
    assert (doc["status"], doc["reason"], doc["completedSteps"]) == (
        "suspended", "waiting for a decision", 1,
    )  # fmt: skip
    assert mine.resume("a", decision="ok").value == "text: ok"
    doc = json.loads(progress.read_text())
    assert (doc["status"], doc["completedSteps"], doc["stepsTotal"]) == ("completed", 1, 1)
    assert seen == [("running", 0)] and calls["draft"] == 1
    assert not elsewhere.exists()  # the option wins over DURABLE_PROGRESS_FILE


def test_a_file_that_cannot_be_written_warns_once_and_the_run_goes_on(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()

    @durable.step
    def work(i: int) -> int:
        calls["work"] += 1
        return i

    bad = tmp_path / "no-such-folder" / "progress.json"

    @durable.workflow(name="robust", store=str(tmp_path / "s"), run_id="r", progress_file=bad)
    def robust() -> list[int]:
        return [work(i) for i in range(3)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert robust() == [0, 1, 2]
    notes = [str(w.message) for w in caught if "progress file" in str(w.message)]
    assert len(notes) == 1 and str(bad) in notes[0] and "the run goes on" in notes[0]
    assert calls["work"] == 3 and not bad.parent.exists()


def test_unset_it_subscribes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DURABLE_PROGRESS_FILE", raising=False)
    before = len(events._callbacks)
    during: list[int] = []

    @durable.step
    def look() -> None:
        during.append(len(events._callbacks))

    @durable.workflow(name="quiet", store=str(tmp_path / "s"), run_id="q")
    def quiet() -> None:
        look()

    quiet()
    assert during == [before]
    with_file = quiet.with_options(run_id="q2", progress_file=tmp_path / "p.json")
    with_file()
    assert during == [before, before + 1] and len(events._callbacks) == before
    assert json.loads((tmp_path / "p.json").read_text())["status"] == "completed"


def test_a_run_cancelled_while_it_runs_ends_cancelled_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file is rewritten "when it ends": a cancel is an end too. It said
    # `running` for good once the holder saw the cancel and stopped.
    monkeypatch.setenv("DURABLE_CANCEL_POLL", "0")
    progress = tmp_path / "p.json"
    calls: Counter[str] = Counter()

    @durable.step
    def first() -> int:
        calls["first"] += 1
        cancelled.cancel("c")  # from outside, while the run holds its lease
        return 1

    @durable.step
    def second() -> int:
        calls["second"] += 1
        return 2

    @durable.workflow(name="cancelled", store=str(tmp_path / "s"), run_id="c", progress_file=progress)
    def cancelled() -> int:
        return first() + second()

    with pytest.raises(durable.Cancelled):
        cancelled()
    doc = json.loads(progress.read_text())
    assert [r.status for r in cancelled.runs()] == ["cancelled"]
    assert (doc["status"], doc["completedSteps"]) == ("cancelled", 1)
    assert calls == Counter(first=1)


def test_the_file_is_made_with_the_processs_umask(tmp_path: Path) -> None:
    # An outside reader (a dashboard as another user) must be able to read
    # it: it was 0600 whatever the umask (mkstemp's mode, kept by os.replace).
    progress = tmp_path / "p.json"

    @durable.workflow(name="perm", store=str(tmp_path / "s"), run_id="m", progress_file=progress)
    def perm() -> int:
        return 1

    umask = os.umask(0o022)
    try:
        assert perm() == 1
    finally:
        os.umask(umask)
    assert stat.S_IMODE(progress.stat().st_mode) == 0o644
