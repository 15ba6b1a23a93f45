"""The 35th new-user walk: rough edges of the `durable` command found by
following the docs and then going off the path. Each test drives the real
command in a child process and checks that nothing recorded is lost."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .clikit import (
    ALL_STEPS,
    PIPELINE_RESULT,
    child_env,
    counts,
    durable,
    read_until,
    runs_json,
    show_json,
    spawn,
    write_flow,
)

pytestmark = pytest.mark.slow

GATE = """
import os

import durable


@durable.step
def prep(x: int) -> int:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("prep\\n")
    return x


@durable.workflow
def gate(x: int = 1) -> str:
    prep(x)
    first = durable.wait_for("decision")
    second = durable.wait_for("decision")
    return f"{first},{second}"
"""


def test_a_var_given_twice_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Before: `durable run flow.py:pipeline --var n=1 --var n=5` ran
    pipeline(n=5), silently dropping n=1, and exited 0."""
    write_flow(tmp_path)
    done = durable(tmp_path, "run", "flow.py:pipeline", "--var", "n=1", "--var", "n=5")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --var n is given twice (n=1, then n=5): give each name once"
    )
    assert counts(tmp_path) == {}
    assert runs_json(tmp_path) == []
    ok = durable(tmp_path, "run", "flow.py:pipeline", "--var", "n=1")
    assert (ok.returncode, ok.stdout.strip()) == (0, str(PIPELINE_RESULT))
    assert counts(tmp_path) == ALL_STEPS


def test_an_input_given_twice_is_refused_and_the_run_keeps_waiting(tmp_path: Path) -> None:
    """Before: `--input decision=a --input decision=b` to a run waiting at two
    wait_for("decision") in a row recorded only b for the first wait (one
    resume answers one wait) and suspended again: the a the user typed was
    dropped without a word."""
    write_flow(tmp_path, GATE)
    assert durable(tmp_path, "run", "flow.py:gate", "--run-id", "g1").returncode == 3
    done = durable(
        tmp_path, "run", "flow.py:gate", "--run-id", "g1", "--resume",
        "--input", "decision=a", "--input", "decision=b",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --input decision is given twice (decision=a, then decision=b): give each "
        "name once; one resume answers one wait_for() of a name, the next wait of it is "
        "answered by the next resume"
    )
    doc = show_json(tmp_path, "g1")
    assert (doc["status"], doc["completedSteps"]) == ("suspended", 1)
    for answer, code in (("a", 3), ("b", 0)):
        step = durable(
            tmp_path, "run", "flow.py:gate", "--run-id", "g1", "--resume", "--input",
            f"decision={answer}",
        )  # fmt: skip
        assert step.returncode == code, step.stderr
    assert step.stdout.strip() == '"a,b"'
    assert counts(tmp_path) == {"prep": 1}


WITHOUT_S3FS = (
    "import sys; sys.modules['s3fs'] = None; from durable._cli.main import main; sys.exit(main())"
)


def test_an_s3_store_without_s3fs_says_what_to_install(tmp_path: Path) -> None:
    """Before: `durable --store s3://bucket/runs runs` without s3fs failed
    (exit 1, as if the store were broken) with "store s3://bucket/runs
    failed: cannot open it: ImportError: Install s3fs to access S3. Records
    already written are intact.", naming neither the extra nor a setup error."""
    write_flow(tmp_path)
    env = child_env(tmp_path)
    for args in (["runs"], ["run", "flow.py:pipeline", "--var", "n=1"]):
        done = subprocess.run(
            [sys.executable, "-c", WITHOUT_S3FS, "--store", "s3://bucket/runs", *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            "durable: store s3://bucket/runs cannot be opened here: s3fs is not installed "
            "(pip install 'durable-fn[s3]', or pip install s3fs). Nothing was read or written."
        )
    assert counts(tmp_path) == {}


def test_a_store_url_of_an_unknown_protocol_is_a_usage_error(tmp_path: Path) -> None:
    """Before: `--store s4://bucket/runs` (a typo) exited 1 with "ValueError:
    Protocol not known: s4. Records already written are intact."."""
    done = durable(tmp_path, "--store", "s4://bucket/runs", "runs")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: store s4://bucket/runs cannot be opened: fsspec knows no protocol 's4' "
        "(a typo? s3://bucket/path, gs://bucket/path, memory://name, or a local folder's "
        "path). Nothing was read or written."
    )


def test_forking_a_running_run_past_its_step_in_flight_says_it_is_running(
    tmp_path: Path,
) -> None:
    """Before: `durable fork r1 --at 2` while r1's step at position 1 ran said
    that position "is not finished (it failed or was not reached)": neither
    was true, and waiting for it to finish was the way out."""
    write_flow(tmp_path)
    holder = spawn(
        tmp_path, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1",
        env=child_env(tmp_path, FLOW_BLOCK_AT="2"),
    )  # fmt: skip
    try:
        read_until(holder.stdout, "step 2 started")
        done = durable(tmp_path, "fork", "r1", "--at", "2")
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            "durable: fork position 2 is out of range: a fork copies the positions finished "
            "from 0 on, and position 1 of run 'r1' is not finished (the run is marked running: "
            "that step may be executing now; fork again once it has finished), so the position "
            "to fork at (--at) must be between 0 and 1"
        )
        assert durable(tmp_path, "fork", "r1", "--at", "1", "--new-run-id", "f1").returncode == 0
    finally:
        _, err = holder.communicate(b"\n", timeout=60)
    assert holder.returncode == 0, err
    assert counts(tmp_path) == ALL_STEPS
    assert durable(tmp_path, "fork", "r1", "--at", "2", "--new-run-id", "f2").returncode == 0
    found = {r["runId"]: (r["status"], r["completedSteps"]) for r in runs_json(tmp_path)}
    assert found == {"r1": ("completed", 5), "f1": ("forked", 1), "f2": ("forked", 2)}


LISTS = """
import os

import durable


@durable.step
def tag(names: list[str]) -> str:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("tag\\n")
    return "+".join(names)


@durable.workflow
def labels(tags: list[str], extra: dict[str, int] | None = None) -> str:
    return tag(tags)
"""


def test_a_var_that_is_not_a_list_for_a_list_parameter_is_refused(tmp_path: Path) -> None:
    """Before: `--var tags=a,b` for `tags: list[str]` ran the workflow with the
    string 'a,b' (its step joined the characters: 'a+,+b') and exited 0."""
    write_flow(tmp_path, LISTS)
    done = durable(tmp_path, "run", "flow.py:labels", "--var", "tags=a,b")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --var tags=a,b reads as the string 'a,b', but flow.labels takes tags as a "
        """list: write it as a JSON list, e.g. --var 'tags=["a", "b"]'"""
    )
    done = durable(tmp_path, "run", "flow.py:labels", "--var", 'tags=["a"]', "--var", "extra=1")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "durable: --var extra=1 reads as JSON (int 1), but flow.labels takes extra as a dict: "
        """write it as a JSON object, e.g. --var 'extra={"key": 1}'"""
    )
    assert counts(tmp_path) == {}
    assert runs_json(tmp_path) == []
    ok = durable(
        tmp_path, "run", "flow.py:labels", "--var", 'tags=["a", "b"]', "--var", "extra=null"
    )
    assert (ok.returncode, ok.stdout.strip()) == (0, '"a+b"'), ok.stderr
    assert counts(tmp_path) == {"tag": 1}


def test_a_run_id_missing_here_but_under_two_other_workflows_names_a_show_that_works(
    tmp_path: Path,
) -> None:
    """Before: `durable run flow.py:approval --run-id same --resume` said "A
    run 'same' exists under another workflow, 'flow.pipeline' and
    'flow.labels': `durable show same` shows it", and that command exited 2
    ("exists in several workflows ... name one with --workflow")."""
    write_flow(tmp_path)
    write_flow(tmp_path, LISTS, name="lists.py")
    assert (
        durable(tmp_path, "run", "flow.py:pipeline", "--run-id", "same", "--var", "n=1").returncode
        == 0
    )
    assert (
        durable(
            tmp_path, "run", "lists.py:labels", "--run-id", "same", "--var", 'tags=["a"]'
        ).returncode
        == 0
    )
    done = durable(tmp_path, "run", "flow.py:approval", "--run-id", "same", "--resume")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith(
        "A run 'same' exists under other workflows, 'flow.pipeline' and 'lists.labels': "
        "`durable show same --workflow flow.pipeline` shows the first."
    ), done.stderr
    shown = durable(tmp_path, "show", "same", "--workflow", "flow.pipeline")
    assert shown.returncode == 0, shown.stderr
    assert counts(tmp_path) == {**ALL_STEPS, "tag": 1}


RELEASE = """
import os

import durable


@durable.step
def fetch(repo: str) -> str:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("fetch\\n")
    return repo.upper()


@durable.workflow
def release(repo: str, decision: str | None = None) -> str:
    notes = fetch(repo)
    if decision is None:
        durable.suspend("waiting for decision")
    return f"{decision}: {notes}"
"""


def test_the_restart_advised_for_a_cancelled_run_keeps_the_vars_just_given(tmp_path: Path) -> None:
    """Before: `durable run flow.py:release --run-id c1 --resume --var
    decision=ok` on a cancelled run advised a restart with the recorded
    `--var decision=null`: typed as said, the run suspended again."""
    write_flow(tmp_path, RELEASE)
    flow = ["run", "flow.py:release", "--run-id", "c1"]
    assert durable(tmp_path, *flow, "--var", "repo=r").returncode == 3
    assert durable(tmp_path, "cancel", "c1").returncode == 0
    cancelled = durable(tmp_path, *flow, "--resume", "--var", "decision=ok")
    assert cancelled.returncode == 4, cancelled.stderr
    (advice,) = [x for x in cancelled.stderr.splitlines() if "restart it with: " in x]
    assert advice == (
        "  restart it with: durable run flow.py:release --run-id c1 --restart "
        "--var 'repo=\"r\"' --var 'decision=\"ok\"'"
    )
    again = durable(tmp_path, *shlex.split(advice.split("restart it with: durable ")[1]))
    assert (again.returncode, again.stdout.strip()) == (0, '"ok: R"'), again.stderr
    assert counts(tmp_path) == {"fetch": 2}  # the restart discarded the cancelled run's record
