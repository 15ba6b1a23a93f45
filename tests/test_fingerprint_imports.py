"""Imports inside a body, across real processes: a run started in a process
that had already imported a module resumes in a fresh one (the fingerprint
does not depend on what was imported first), an edit to the user's module
imported in a helper's body still refuses the resume, and a step imported
inside the workflow body is part of the workflow's definition."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FLOW = '''
import os, sys
import durable

if os.environ.get("PRE_IMPORT"):  # what another entry point may have loaded first
    import colorsys, mylib  # noqa: F401

LOG = sys.argv[1]


def scale(x):
    import colorsys  # a library: loaded above or not
    import mylib  # the user's own module
    return mylib.bump(x) + colorsys.ONE_THIRD


@durable.step
def first(x):
    open(LOG, "a").write("first\\n")
    return x


@durable.step
def second(x):
    open(LOG, "a").write("second\\n")
    if os.environ.get("FAIL"):
        raise RuntimeError("second fails")
    return round(scale(x), 3)


@durable.workflow(run_id="r")
def wf(x):
    from tasks import third  # a step imported in the body
    return third(second(first(x)))


print("result", wf(3))
'''

TASKS = '''
import sys
import durable


@durable.step
def third(x):
    open(sys.argv[1], "a").write("third\\n")
    if "FAIL_THIRD" in __import__("os").environ:
        raise RuntimeError("third fails")
    return x * 2
'''


def project(tmp_path: Path) -> Path:
    (tmp_path / "flow.py").write_text(FLOW, encoding="utf-8")
    (tmp_path / "tasks.py").write_text(TASKS, encoding="utf-8")
    (tmp_path / "mylib.py").write_text("STEP = 1\n\n\ndef bump(x):\n    return x + STEP\n")
    return tmp_path / "log"


def run(tmp_path: Path, env: dict[str, str], **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "flow.py", str(tmp_path / "log")], cwd=tmp_path,
        env={**env, **extra}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def executions(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").split()


def test_a_run_started_after_other_imports_resumes_in_a_fresh_process(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    log = project(tmp_path)
    failed = run(tmp_path, child_env, PRE_IMPORT="1", FAIL="1")
    assert failed.returncode == 1 and "second fails" in failed.stderr
    resumed = run(tmp_path, child_env)  # colorsys and mylib not imported first
    assert resumed.returncode == 0, resumed.stderr
    assert "result 8.666" in resumed.stdout
    assert executions(log) == ["first", "second", "second", "third"]


@pytest.mark.parametrize("pre_import", ["1", ""])
def test_an_edit_to_a_module_imported_in_a_body_refuses_the_resume(
    tmp_path: Path, child_env: dict[str, str], pre_import: str
) -> None:
    log = project(tmp_path)
    assert run(tmp_path, child_env, PRE_IMPORT=pre_import, FAIL="1").returncode == 1
    (tmp_path / "mylib.py").write_text("STEP = 2\n\n\ndef bump(x):\n    return x + STEP\n")
    refused = run(tmp_path, child_env, PRE_IMPORT=pre_import)
    assert refused.returncode == 1 and "DefinitionChangedError" in refused.stderr
    assert "second" in refused.stderr.split("DefinitionChangedError")[-1]
    assert executions(log) == ["first", "second"]  # nothing ran on the changed code


def test_an_edit_to_a_step_imported_in_the_workflow_body_refuses_the_resume(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    log = project(tmp_path)
    failed = run(tmp_path, child_env, FAIL_THIRD="1")
    assert failed.returncode == 1 and "third fails" in failed.stderr
    tasks = tmp_path / "tasks.py"
    tasks.write_text(tasks.read_text().replace("x * 2", "x * 3"), encoding="utf-8")
    refused = run(tmp_path, child_env)
    assert refused.returncode == 1 and "DefinitionChangedError" in refused.stderr
    assert "third" in refused.stderr.split("DefinitionChangedError")[-1]
    assert executions(log) == ["first", "second", "third"]
