"""The `durable` command, run for real in child processes: every command and
every exit code, crash and resume, refusals, suspended runs."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import durable as durable_lib
from durable.testing import fake_clock

from .clikit import (
    ALL_STEPS,
    FLOW,
    PIPELINE_RESULT,
    child_env,
    counts,
    durable,
    read_until,
    report_lines,
    runs_json,
    show_json,
    spawn,
    write_flow,
)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    return tmp_path


def test_run_prints_the_value_and_exits_0_without_the_main_block(tmp: Path) -> None:
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert "run r1 completed" in done.stderr
    assert counts(tmp) == ALL_STEPS  # and "main-block" never ran
    again = durable(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1")
    assert again.returncode == 0 and again.stdout.strip() == str(PIPELINE_RESULT)
    assert "already completed" in again.stderr
    assert counts(tmp) == ALL_STEPS


def test_the_installed_console_script(tmp: Path) -> None:
    script = shutil.which(str(Path(sys.executable).parent / "durable"))
    if script is None:
        pytest.skip("the durable console script is not installed in this environment")
    done = subprocess.run(
        [script, "run", "flow.py:pipeline", "--run-id", "ep", "--var", "n=1"],
        cwd=tmp, env=child_env(tmp), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    listed = subprocess.run([script, "runs", "--json"], cwd=tmp, env=child_env(tmp),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert [r["runId"] for r in json.loads(listed.stdout)] == ["ep"]


@pytest.mark.slow
def test_killed_mid_run_then_resume_prints_resumed_from_step(tmp: Path) -> None:
    env = child_env(tmp, FLOW_BLOCK_AT="3")
    child = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--var", "n=1", env=env)
    try:
        read_until(child.stdout, "step 3 started")
        # while it runs, a second runner and rm are refused (exit 2), and nothing runs twice
        again = durable(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--resume")
        assert again.returncode == 2 and "is being executed by pid" in again.stderr
        removing = durable(tmp, "rm", "k1")
        assert removing.returncode == 2 and "is being executed by pid" in removing.stderr
        assert runs_json(tmp)[0]["status"] == "running"
        child.kill()  # SIGKILL: no handler, no cleanup, no final status
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 1}
    (listed,) = runs_json(tmp)
    assert (listed["status"], listed["completedSteps"], listed["currentStep"]) == (
        "interrupted", 2, 2,
    )  # fmt: skip
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "k1", "--resume")
    assert done.returncode == 0, done.stderr
    assert "Resumed from step 3" in done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 2, "s4": 1, "s5": 1}


def test_resume_of_a_missing_run_exits_2_and_executes_nothing(tmp: Path) -> None:
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "nope", "--resume", "--var", "n=1")
    assert done.returncode == 2
    assert "no run 'nope'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2
    assert counts(tmp) == {}
    assert runs_json(tmp) == []
    # --resume without --run-id needs some unfinished run to exist
    bare = durable(tmp, "run", "flow.py:pipeline", "--resume")
    assert bare.returncode == 2 and "no unfinished run" in bare.stderr
    assert counts(tmp) == {}


def test_var_finishes_a_suspended_run(tmp: Path) -> None:
    first = durable(tmp, "run", "flow.py:approval", "--run-id", "a1", "--var", "topic=release")
    assert first.returncode == 3, first.stderr
    assert "suspended" in first.stderr and "waiting for reviewer_decision" in first.stderr
    assert first.stdout == ""
    done = durable(
        tmp, "run", "flow.py:approval", "--run-id", "a1", "--var", "reviewer_decision=approved"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == "draft about release: approved"
    assert "Resumed from step 2" in done.stderr
    assert counts(tmp) == {"draft": 1}


def test_changed_definition_is_refused_with_both_fingerprints_then_rebased(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:approval", "--run-id", "c1", "--var", "topic=x").returncode == 3
    (recorded,) = runs_json(tmp)
    old = recorded["fingerprint"]
    write_flow(tmp, FLOW.replace('f"draft about {topic}"', 'f"new draft about {topic}"'))
    new = subprocess.run(
        [sys.executable, "-c",
         "from durable._cli.target import load_target; print(load_target('flow.py:approval').fingerprint)"],
        cwd=tmp, env=child_env(tmp), capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert re.fullmatch(r"[0-9a-f]{12}", new) and new != old

    refused = durable(tmp, "run", "flow.py:approval", "--run-id", "c1", "--var", "reviewer_decision=ok")
    assert refused.returncode == 2
    assert old in refused.stderr and new in refused.stderr
    assert "--rebase-checkpoint" in refused.stderr and "Traceback" not in refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 5 and lines[2].startswith("  or continue with the old records: ")
    assert counts(tmp) == {"draft": 1}

    rebased = durable(tmp, *shlex.split(lines[2].split(": ", 1)[1])[1:])  # typed as advised
    assert rebased.returncode == 0, rebased.stderr
    assert json.loads(rebased.stdout) == "draft about x: ok"  # the recorded draft, replayed
    assert counts(tmp) == {"draft": 1}


def test_a_failing_step_exits_1_with_one_line_and_debug_shows_the_traceback(tmp: Path) -> None:
    done = durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=5")
    assert done.returncode == 1
    lines = report_lines(done.stderr)
    assert len(lines) == 3 and "Traceback" not in done.stderr  # newuser45: and where it raised
    assert "failed at step 2 (position 1, explode): ValueError: bad input 6" in lines[0]
    assert lines[1].strip().startswith("raised at flow.py, line "), lines[1]
    assert runs_json(tmp)[0]["status"] == "failed"
    # As a user runs it, without the tests' DURABLE_TRACEBACK=full: --debug
    # shows the engine's frames too (it showed the traceback cut for a user).
    env = {k: v for k, v in child_env(tmp).items() if k != "DURABLE_TRACEBACK"}
    debug = durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--resume", "--debug", env=env)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert "durable/_core/steps.py" in debug.stderr.replace("\\", "/")
    assert counts(tmp) == {"s1": 1, "explode": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "flow.py"], "names no workflow; its workflows: approval, broken, napping"),
        (["run", "flow"], "must be path/to/file.py:workflow"),
        (["run", "flow.py:nothing_here", "--var", "n=1"], "flow.py has no nothing_here"),
        (["run", "missing.py:pipeline"], "cannot load"),
        (["run", "flow.py:pipeline"], "pass the workflow's arguments with --var"),
        (["run", "flow.py:pipeline", "--var", "oops"], "NAME=VALUE"),
        (["run", "flow.py:pipeline", "--var", "n=1", "--var", "m=2"], "has no parameter m"),
        (["run", "flow.py:pipeline", "--run-id", "../escape", "--var", "n=1"], "invalid run id"),
        (["show", "ghost"], "no run 'ghost'"),
        (["fork", "ghost", "--at", "1"], "no run 'ghost'"),
        (["gc"], "needs at least one of"),
        (["gc", "--older-than", "soon"], "not an age"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_without_traceback(tmp: Path, args: list[str], message: str) -> None:
    done = durable(tmp, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert counts(tmp) == {}


def test_var_values_are_json_when_they_parse(tmp: Path) -> None:
    source = FLOW + (
        "\n@durable.workflow\ndef echo(a, b, c, d):\n    return [a, b, c, d, type(a).__name__]\n"
    )
    write_flow(tmp, source)
    done = durable(tmp, "run", "flow.py:echo", "--var", "a=5", "--var", "b=hello",
                   "--var", 'c=[1, "x"]', "--var", "d=null")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [5, "hello", [1, "x"], None, "int"]


def test_a_run_started_by_python_file_resumes_under_durable_run(tmp: Path) -> None:
    direct = subprocess.run([sys.executable, "flow.py"], cwd=tmp, env=child_env(tmp),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert direct.returncode == 0, direct.stderr
    assert counts(tmp) == {"main-block": 1, **ALL_STEPS}
    # same identity (__main__.pipeline), same fingerprint: replayed, not refused
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "from-main", "--resume")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert counts(tmp) == {"main-block": 1, **ALL_STEPS}


def test_module_targets_and_the_store_flag(tmp: Path) -> None:
    pkg = tmp / "jobs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "flows.py").write_text(FLOW)
    elsewhere = tmp / "elsewhere"
    done = durable(tmp, "run", "jobs.flows:pipeline", "--var", "n=1", "--store", str(elsewhere))
    assert done.returncode == 0, done.stderr
    assert runs_json(tmp) == []  # nothing in $DURABLE_STORE
    (listed,) = runs_json(tmp, "--store", str(elsewhere))
    before = durable(tmp, "--store", str(elsewhere), "runs", "--json")  # before the command too
    assert json.loads(before.stdout) == [listed]
    assert listed["workflow"] == "pipeline" and listed["status"] == "completed"
    assert listed["runId"].startswith("pipeline-")  # derived from the arguments


def test_default_store_is_dot_durable_in_the_working_directory(tmp: Path) -> None:
    env = child_env(tmp)
    del env["DURABLE_STORE"]
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "d1", "--var", "n=1", env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp / ".durable" / "flow.pipeline" / "d1" / "run").is_file()
    assert [r["runId"] for r in runs_json(tmp, env=env)] == ["d1"]


def test_runs_lists_newest_first_as_a_table_json_and_by_status(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "p1", "--var", "n=1").returncode == 0
    assert durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=1").returncode == 1
    assert durable(tmp, "run", "flow.py:approval", "--run-id", "a1", "--var", "topic=t").returncode == 3
    table = durable(tmp, "runs")
    assert table.returncode == 0
    lines = table.stdout.strip().splitlines()
    assert lines[0].split() == ["WORKFLOW", "RUN", "ID", "STATUS", "STEPS", "FINGERPRINT", "UPDATED"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["flow.approval", "a1", "suspended", "1"],
        ["flow.broken", "b1", "failed", "1"],
        ["flow.pipeline", "p1", "completed", "5"],
    ]
    assert len({line.index("STATUS") if i == 0 else line.index(line.split()[2])
                for i, line in enumerate(lines)}) == 1  # fmt: skip  # aligned column
    docs = runs_json(tmp)
    assert [d["runId"] for d in docs] == ["a1", "b1", "p1"]
    assert docs[1]["error"] == "ValueError: bad input 2"
    assert docs[0]["reason"] == "waiting for reviewer_decision"
    assert [d["runId"] for d in runs_json(tmp, "--status", "failed")] == ["b1"]
    assert [d["runId"] for d in runs_json(tmp, "flow.pipeline")] == ["p1"]


def test_show_prints_a_timeline_and_a_json_document(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=1").returncode == 1
    text = durable(tmp, "show", "b1")
    assert text.returncode == 0
    assert "status    failed" in text.stdout
    rows = [line.split()[:4] for line in text.stdout.splitlines() if line[:1].isdigit()]
    assert rows == [["0", "step", "s1", "completed"], ["1", "step", "explode", "failed"]]
    doc = show_json(tmp, "b1", "--workflow", "flow.broken")
    assert {"workflow", "runId", "status", "startedAt", "completedSteps", "currentStep", "steps"} <= set(doc)
    assert (doc["workflow"], doc["runId"], doc["status"]) == ("flow.broken", "b1", "failed")
    assert (doc["completedSteps"], doc["currentStep"]) == (1, 1)
    first, second = doc["steps"]
    for step in doc["steps"]:
        assert {"name", "status", "outputPreview", "error", "attempts", "startedAt", "endedAt"} <= set(step)
    assert (first["name"], first["status"], first["outputPreview"], first["attempts"]) == (
        "s1", "completed", "2", 1,
    )  # fmt: skip
    assert first["startedAt"].endswith("Z") and first["endedAt"] >= first["startedAt"]
    assert (second["name"], second["status"], second["error"]) == (
        "explode", "failed", "ValueError: bad input 2",
    )  # fmt: skip


def seed(tmp: Path, workflow: str, *run_ids: str) -> None:
    """Completed runs made in this process (the commands under test only
    read and remove them), to spare a child process each."""
    flow = durable_lib.workflow(name=workflow, store=durable_lib.open_store(tmp / "store"))(_double)
    for rid in run_ids:
        flow.with_options(run_id=rid)(1)


def test_rm_removes_runs_and_refuses_missing_ones(tmp: Path) -> None:
    seed(tmp, "pipeline", "r1", "r2", "r3")
    done = durable(tmp, "rm", "r1", "r2", "--workflow", "pipeline")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["removed pipeline/r1", "removed pipeline/r2"]
    assert [r["runId"] for r in runs_json(tmp)] == ["r3"]
    assert not (tmp / "store" / "pipeline" / "r1").exists()
    missing = durable(tmp, "rm", "ghost", "r3")
    assert missing.returncode == 2 and "no run 'ghost'" in missing.stderr
    assert runs_json(tmp) == []  # r3 still went


def test_gc_keep_last_older_than_status_and_dry_run(tmp: Path) -> None:
    store = durable_lib.open_store(tmp / "store")
    old = durable_lib.workflow(name="pipeline", store=store)(_double)
    with fake_clock(start=time.time() - 10 * 86400):
        old.with_options(run_id="ancient")(1)
    seed(tmp, "pipeline", "r1", "r2", "r3")
    assert durable(tmp, "run", "flow.py:broken", "--run-id", "b1", "--var", "x=1").returncode == 1

    dry = durable(tmp, "gc", "--older-than", "7d", "--dry-run")
    assert dry.returncode == 0 and "would remove 1 run" in dry.stderr and "ancient" in dry.stdout
    assert len(runs_json(tmp)) == 5
    gone = durable(tmp, "gc", "--older-than", "7d")
    assert "removed 1 run" in gone.stderr
    assert "ancient" not in {r["runId"] for r in runs_json(tmp)}

    kept = durable(tmp, "gc", "--keep-last", "1", "--status", "completed")
    assert kept.returncode == 0 and "removed 2 runs" in kept.stderr
    assert {r["runId"] for r in runs_json(tmp)} == {"r3", "b1"}
    assert durable(tmp, "gc", "--status", "failed").returncode == 0
    assert [r["runId"] for r in runs_json(tmp)] == ["r3"]


def _double(n: int) -> int:
    return n * 2


def test_fork_creates_records_without_executing_then_run_resumes_it(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "src", "--var", "n=1").returncode == 0
    forked = durable(tmp, "fork", "src", "--at", "3", "--new-run-id", "branch")
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.strip() == "branch"
    assert counts(tmp) == ALL_STEPS  # nothing executed
    doc = show_json(tmp, "branch")
    assert doc["status"] == "forked" and doc["completedSteps"] == 3
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [
        ("s1", "completed"), ("s2", "completed"), ("s3", "completed"),
        ("s4", "pending"), ("s5", "pending"),  # the source's steps still to come
    ]  # fmt: skip
    assert doc["stepsTotal"] == 5
    done = durable(tmp, "run", "flow.py:pipeline", "--run-id", "branch", "--resume")
    assert done.returncode == 0, done.stderr
    assert "Resumed from step 4" in done.stderr
    assert done.stdout.strip() == str(PIPELINE_RESULT)
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 1, "s4": 2, "s5": 2}
    out_of_range = durable(tmp, "fork", "src", "--at", "9")
    assert out_of_range.returncode == 2 and "out of range" in out_of_range.stderr


def test_restart_and_on_change_rerun(tmp: Path) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "r", "--var", "n=1").returncode == 0
    restarted = durable(tmp, "run", "flow.py:pipeline", "--run-id", "r", "--restart", "--var", "n=2")
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.strip() == str(((2 + 1) * 2 + 10) * 3 - 1)
    assert counts(tmp) == {"s1": 2, "s2": 2, "s3": 2, "s4": 2, "s5": 2}
    write_flow(tmp, FLOW.replace("return n * 3", "return n * 4"))  # s4 changes
    rerun = durable(tmp, "run", "flow.py:pipeline", "--run-id", "r", "--on-change", "rerun")
    assert rerun.returncode == 0, rerun.stderr
    assert "Resumed from step 4" in rerun.stderr
    assert rerun.stdout.strip() == str(((2 + 1) * 2 + 10) * 4 - 1)
    assert counts(tmp) == {"s1": 2, "s2": 2, "s3": 2, "s4": 3, "s5": 3}


def test_a_completed_run_called_with_other_arguments_is_refused_and_restart_starts_fresh(
    tmp: Path,
) -> None:
    assert durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--var", "n=1").returncode == 0
    other = durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--var", "n=2")
    assert other.returncode == 2, other.stderr
    assert "n: 1 -> 2" in other.stderr and "--restart" in other.stderr
    over = durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--resume", "--var", "n=2")
    assert over.returncode == 2 and "n: 1 -> 2" in over.stderr
    same = durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--var", "n=1")
    assert same.returncode == 0
    assert counts(tmp) == {f"s{i}": 1 for i in range(1, 6)}
    fresh = durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--restart", "--var", "n=2")
    assert fresh.returncode == 0, fresh.stderr
    assert counts(tmp) == {f"s{i}": 2 for i in range(1, 6)}
    missing = durable(tmp, "run", "flow.py:pipeline", "--run-id", "c1", "--restart")
    assert missing.returncode == 2 and "required argument: 'n'" in missing.stderr
    assert counts(tmp) == {f"s{i}": 2 for i in range(1, 6)}
