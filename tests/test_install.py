"""Installing as people install (issue 14, item 7): the package ships
py.typed, an editable install keeps its types visible to mypy, and a step
typed at the plain Python prompt gets an error that says what to do."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .clikit import REPO

STEP_AT_THE_PROMPT = """import durable

@durable.step
def add_one(x):
    return x + 1

"""


@pytest.mark.parametrize("how", [["-"], ["-i"]], ids=["python -", "the plain prompt"])
def test_a_step_typed_at_the_prompt_names_stdin_and_says_what_to_do(
    tmp_path: Path, how: list[str]
) -> None:
    env = {"PYTHONPATH": str(REPO), "DURABLE_STORE": str(tmp_path / "s"), "PATH": ""}
    done = subprocess.run(
        [sys.executable, *how], input=STEP_AT_THE_PROMPT, cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    found = [line for line in done.stderr.splitlines() if "ConfigurationError:" in line]
    if how == ["-i"] and sys.version_info >= (3, 13):
        # 3.13's prompt keeps what is typed at it: the step has its source.
        assert found == [] and "Traceback" not in done.stderr, done.stderr
        return
    assert len(found) == 1, done.stderr  # at the prompt, after its ">>> " and "... " echoes
    last = found[0][found[0].index("durable.errors") :]
    assert last.startswith("durable.errors.ConfigurationError: cannot read the source of")
    assert "add_one (defined in <stdin>" in last
    assert "Put it in a file" in last and "version='...'" in last
    assert not (tmp_path / "s").exists()  # nothing was recorded


def test_the_package_data_holds_py_typed() -> None:
    assert (REPO / "durable" / "py.typed").is_file()
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '[tool.setuptools.package-data]\ndurable = ["py.typed"]' in text
    # a plain path entry for `pip install -e .`, not an import hook mypy cannot follow
    assert '[tool.setuptools]\npackage-dir = {"" = "."}' in text


TYPED = """import durable


@durable.step
def double(x: int) -> int:
    return 2 * x


reveal_type(double(1))
"""


@pytest.mark.slow
def test_an_editable_install_is_seen_by_mypy(tmp_path: Path) -> None:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv (the test extra) is not installed")
    project = tmp_path / "project"  # a copy: the install writes its metadata next to it
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(REPO / "durable", project / "durable",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    venv = tmp_path / "venv"

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip

    made = call(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    assert made.returncode == 0, made.stderr
    installed = call(uv, "pip", "install", "--quiet", "--no-deps", "--python",
                     str(venv / "bin" / "python"), "-e", str(project))  # fmt: skip
    if installed.returncode != 0 and "network" in installed.stderr.lower():
        pytest.skip(f"cannot fetch the build backend: {installed.stderr.strip()[-200:]}")
    assert installed.returncode == 0, installed.stderr
    (tmp_path / "use.py").write_text(TYPED)
    checked = call(sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                   "--cache-dir", os.devnull, "--python-executable",
                   str(venv / "bin" / "python"), "use.py")  # fmt: skip
    assert re.search(r'Revealed type is "(builtins\.)?int"', checked.stdout), checked.stdout
    assert checked.returncode == 0 and "Success: no issues found" in checked.stdout
