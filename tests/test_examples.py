"""The examples a newcomer runs first keep working."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_quickstart_dies_then_resumes(tmp_path: Path, child_env: dict[str, str]) -> None:
    out = run([str(ROOT / "examples" / "quickstart.py")], child_env, tmp_path)
    assert out.returncode == 0, out.stderr
    # Run again in the same folder, as `python examples/quickstart.py` twice:
    # it said "(will be killed during step 3)", replayed all five steps, and
    # "first run died with exit status 0".
    again = run([str(ROOT / "examples" / "quickstart.py")], child_env, tmp_path)
    assert again.stdout == out.stdout
    text = out.stdout
    assert "first run died with exit status -9" in text
    second = text.split("== Second run")[1].split("== Third run")[0]
    assert "Resumed from step 3" in second
    assert "replayed without executing: download, clean" in second
    assert second.count("executing ") == 3
    third = text.split("== Third run")[1]
    assert "executing " not in third and "executed: nothing" in third
    assert third.count("score=22.1") == 1


def test_release_notes_suspends_then_resumes(tmp_path: Path, child_env: dict[str, str]) -> None:
    script = str(ROOT / "examples" / "release_notes.py")
    first = run([script], child_env, tmp_path)
    assert first.returncode == 3 and "Suspended: waiting for reviewer_decision" in first.stdout
    assert first.stdout.count("summarising") == 3
    second = run([script, "approved"], child_env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "summarising" not in second.stdout and "fetching" not in second.stdout
    assert "Resumed from step 3" in second.stdout
    assert "Release notes (approved)" in second.stdout
    # Run again, as a newcomer does: it printed "DefinitionChangedError ...
    # completed with other arguments" with a traceback.
    third = run([script], child_env, tmp_path)
    assert (third.returncode, third.stderr) == (0, "")
    assert third.stdout.startswith("Release notes (approved)\n- retry S3 uploads (fix)")
    other = run([script, "rejected"], child_env, tmp_path)
    assert (other.returncode, other.stdout) == (2, "")
    assert "release-1.0 was already published as 'approved'" in other.stderr
