"""`durable fork` / `Workflow.fork` of a run while another process runs it
(paused inside a step by a pipe handshake), and `durable rm` of it.

On S3 the fork copies the finished prefix (positions 0 and 1), refuses a
position the runner has not finished, and its run executes each step not
copied once and replays each copied one; the source goes on untouched.
On the local store the runner is a resume with `on_change="rerun"` after
an edit of step 1: the records it re-runs from are discarded before it
executes, so no fork copies the one it is about to replace; `durable rm`
refuses while it holds the run, and it finishes. These held when written
(hunt45): guards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCRIPT = """
import json, os, sys
import durable

def note(i, role):
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {role}\\n")

@durable.step(name="work")
def work(i: int) -> str:
    role = os.environ["ROLE"]
    note(i, role)
    if i == 2 and role == "source":
        print("AT2", flush=True)
        sys.stdin.readline()  # the parent forks meanwhile
    if i == 2 and role == "first":
        raise RuntimeError("step 2 fails in the first attempt")
    return f"{i} by {role}"

@durable.step(name="one")
def one() -> str:
    role = os.environ["ROLE"]
    note(1, role)
    if role == "rerun":
        print("AT1", flush=True)
        sys.stdin.readline()  # the parent forks and removes meanwhile
    return "EDIT by " + role

@durable.workflow(name="hunt45")
def hunt45() -> list:
    return [work(0), one(), work(2), work(3)]

wf = hunt45.with_options(store=durable.open_store(os.environ["STORE"]), wait=60)
role = os.environ["ROLE"]
try:
    if role in ("source", "first"):
        run = wf.with_options(run_id="src").run()
    elif role == "rerun":
        run = wf.with_options(on_change="rerun").resume("src")
    elif role == "api":  # Workflow.fork while the source is paused, then its run
        run = wf.fork("src", at=2, new_run_id="api")
    else:
        run = wf.resume(os.environ["FORK_ID"])
except RuntimeError as e:
    print("FAILED", e, flush=True)
    sys.exit(3)
print("DONE", json.dumps(run.value), flush=True)
"""


def _spawn(script: Path, env: dict[str, str], role: str, **more: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script)], env=dict(env, ROLE=role, **more),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _done(proc: subprocess.Popen[str]) -> list[str]:
    out, _ = proc.communicate("\n", timeout=120)
    assert proc.returncode == 0, out
    tag, _, value = out.strip().rpartition("\n")[2].partition(" ")
    assert tag == "DONE", out
    return list(json.loads(value))


def _executed(log: Path) -> Counter[tuple[str, ...]]:
    return Counter(tuple(line.split()) for line in log.read_text().splitlines())


def _statuses(url: str) -> dict[str, str]:
    store = (
        durable.open_store(url, skip_instance_cache=True)
        if "://" in url
        else durable.open_store(url)
    )
    wf = durable.workflow(name="hunt45")(lambda: None).with_options(store=store)
    return {r.run_id: r.status for r in wf.runs()}


def _refused_fork(url: str, at: int, unfinished: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", url, "fork", "src", "--at", str(at), "--new-run-id", "early"]) == 2
    said = capsys.readouterr().err
    assert f"position {unfinished} of run 'src' is not finished" in said, said
    assert "marked running" in said, said


def test_a_fork_of_a_run_running_on_s3_copies_its_finished_prefix_and_runs_the_rest_once(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(STORE=s3_url, COUNT_LOG=str(log))
    source = _spawn(script, env, "source")
    forker = source
    try:
        assert source.stdout is not None
        assert source.stdout.readline().strip() == "AT2"  # 0 and 1 recorded, 2 executing
        _refused_fork(s3_url, 3, 2, capsys)  # position 2 is the runner's, not a fork's
        forker = _spawn(script, env, "api")
        forked = _done(forker)  # while the source is still paused in step 2
        mine = _done(source)
    finally:
        for proc in (source, forker):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert mine == ["0 by source", "EDIT by source", "2 by source", "3 by source"]
    assert forked == ["0 by source", "EDIT by source", "2 by api", "3 by api"]
    runs = {(str(i), "source"): 1 for i in range(4)}
    assert _executed(log) == runs | {("2", "api"): 1, ("3", "api"): 1}
    assert _statuses(s3_url) == {"src": "completed", "api": "completed"}


def test_a_fork_of_a_local_rerun_in_progress_never_copies_what_it_replaces_and_rm_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs")
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT.replace("EDIT", "v1"))
    log = tmp_path / "executions.log"
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", STORE=url, COUNT_LOG=str(log)
    )
    first = subprocess.run([sys.executable, str(script)], env=dict(env, ROLE="first"),
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert first.returncode == 3 and first.stdout.startswith("FAILED"), first
    script.write_text(SCRIPT.replace("EDIT", "v2"))  # step 1 edited: a rerun from there
    rerun = _spawn(script, env, "rerun")
    fork = rerun
    try:
        assert rerun.stdout is not None
        assert rerun.stdout.readline().strip() == "AT1"
        # v1's record of position 1 is what the rerun replaces: never copied.
        _refused_fork(url, 2, 1, capsys)
        # A live holder: rm refuses and says why; the runner goes on below.
        assert main(["--store", url, "rm", "src"]) == 2
        said = capsys.readouterr()
        assert "removed" not in said.out and "is being executed by pid" in said.err, said
        assert main(["--store", url, "fork", "src", "--at", "1", "--new-run-id", "cli"]) == 0
        assert capsys.readouterr().out.strip() == "cli"
        fork = _spawn(script, env, "cli", FORK_ID="cli")
        forked = _done(fork)  # while the rerun is still paused in step 1
        mine = _done(rerun)
    finally:
        for proc in (rerun, fork):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert mine == ["0 by first", "v2 by rerun", "2 by rerun", "3 by rerun"]
    assert forked == ["0 by first", "v2 by cli", "2 by cli", "3 by cli"]
    runs = [
        ("0", "first"),
        ("1", "first"),
        ("2", "first"),
        ("1", "rerun"),
        ("2", "rerun"),
        ("3", "rerun"),
    ]
    assert _executed(log) == Counter([*runs, ("1", "cli"), ("2", "cli"), ("3", "cli")])
    assert _statuses(url) == {"src": "completed", "cli": "completed"}
