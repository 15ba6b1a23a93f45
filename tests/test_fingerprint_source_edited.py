"""A module file edited after a process imported it no longer describes
the running functions: the workflow refuses to run (and records nothing)
until the process re-imports it; a new process then works normally (real
processes; moved from test_fingerprint_source.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._manage.runs import list_runs

REPO = Path(__file__).resolve().parents[1]

FLOW = """\
import os
import durable

COUNTS = os.environ["FP_COUNTS"]


def bump(name):
    with open(os.path.join(COUNTS, name), "a") as f:
        f.write("x")


@durable.step
def load(n):
    bump("load")
    return list(range(n))


@durable.step
def total(xs):
    bump("total")
    return sum(xs)


@durable.workflow
def pipeline(n):
    return total(load(n))
"""

# Each keeps every parameter: the check of parameter names alone misses them.
EDITS = {
    "step-body": FLOW.replace("return sum(xs)", "return sum(xs) * 10"),
    "blank-lines-above-a-step": FLOW.replace(
        "@durable.step\ndef total", "\n\n@durable.step\ndef total"
    ),
    "workflow-body": FLOW.replace("total(load(n))", "total(load(n + 1))"),
}

# Imports the module, optionally rewrites its file, then calls the workflow.
DRIVER = """\
import json, sys
import durable
import flow_mod

new_text, run_ids = sys.argv[1], sys.argv[2:]
if new_text != "-":
    with open(flow_mod.__file__, "w") as f:
        f.write(open(new_text).read())
out = {}
for run_id in run_ids:
    try:
        out[run_id] = flow_mod.pipeline.with_options(run_id=run_id)(3)
    except durable.DurableError as e:
        out[run_id] = {"error": type(e).__name__, "message": str(e)}
print(json.dumps(out))
"""


def made(root: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{root}",
        "PYTHONDONTWRITEBYTECODE": "1",  # a stale .pyc of the same size and second would lie
        "DURABLE_STORE": str(root / "store"),
        # Relative to the folder the driver runs in (cwd): the flow's
        # `COUNTS` global, which its fingerprint counts, is the same in the
        # copies of `first_run`.
        "FP_COUNTS": "counts",
    }
    return {"root": root, "env": env}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run r1 of the unedited file, the same for every edit: run once and
    copied into each case (a process less a case, on every Python)."""
    root = tmp_path_factory.mktemp("first")
    (root / "counts").mkdir()
    (root / "flow_mod.py").write_text(FLOW)
    (root / "drive.py").write_text(DRIVER)
    first = made(root)
    assert drive(first, None, "r1") == {"r1": 3}
    assert counts(first) == {"load": 1, "total": 1}
    return root


@pytest.fixture
def flow(first_run: Path, tmp_path: Path) -> dict[str, Any]:
    """A copy of what run r1 left: the files, the store, the counts."""
    shutil.copytree(first_run, tmp_path, dirs_exist_ok=True)
    return made(tmp_path)


def drive(flow: dict[str, Any], new_text: str | None, *run_ids: str) -> dict[str, Any]:
    root: Path = flow["root"]
    arg = "-"
    if new_text is not None:
        (root / "new_text.py").write_text(new_text)
        arg = str(root / "new_text.py")
    done = subprocess.run(
        [sys.executable, str(root / "drive.py"), arg, *run_ids],
        cwd=root,
        env=flow["env"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def counts(flow: dict[str, Any]) -> dict[str, int]:
    return {p.name: len(p.read_text()) for p in sorted((flow["root"] / "counts").iterdir())}


def run_ids(flow: dict[str, Any]) -> dict[str, str]:
    store = durable.open_store(flow["root"] / "store")
    return {r.run_id: r.status for r in list_runs(store, "pipeline")}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_file_edited_after_import_is_refused_until_reimported(
    flow: dict[str, Any], edit: str
) -> None:
    assert run_ids(flow) == {"r1": "completed"}  # run r1 of the unedited file (`first_run`)
    assert counts(flow) == {"load": 1, "total": 1}

    # Same process: imported, then edited on disk, then called.
    stale = drive(flow, EDITS[edit], "r1", "r2")
    for run_id in ("r1", "r2"):
        assert stale[run_id]["error"] == "ConfigurationError", stale
        message = stale[run_id]["message"]
        assert "no longer matches the running code (edited after import?)" in message
        assert "re-import the module" in message and "restart" in message
    assert counts(flow) == {"load": 1, "total": 1}  # nothing ran
    assert run_ids(flow) == {"r1": "completed"}  # nothing recorded: no r2

    # A new process imports the edited file and works normally.
    fresh = drive(flow, None, "r2", "r1")
    expected = {"step-body": 30, "blank-lines-above-a-step": 3, "workflow-body": 6}[edit]
    assert fresh["r2"] == expected
    assert counts(flow) == {"load": 2, "total": 2}
    if edit == "blank-lines-above-a-step":
        assert fresh["r1"] == 3  # a cosmetic edit: the completed run replays
    else:
        assert fresh["r1"]["error"] == "DefinitionChangedError"
    assert counts(flow) == {"load": 2, "total": 2}
