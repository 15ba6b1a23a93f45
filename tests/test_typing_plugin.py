"""mypy on a user's program with durable's plugin (durable/mypy_plugin.py):
a generic `def` under @durable.workflow is a Workflow, so adding a str to
`echo(1)` is the error a plain function gives, not a complaint about a
coroutine; `async def` stays an AsyncWorkflow; a generic method takes its
arguments. Without the plugin mypy solved
T to fit the overload for `async def` (the bug it fixes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .clikit import REPO

USER = """\
from typing import TypeVar

import durable

T = TypeVar("T")


@durable.workflow
def echo(x: T) -> T:
    return x


@durable.workflow(name="named")
def named(x: T) -> T:
    return x


@durable.workflow
async def aecho(x: T) -> T:
    return x


class Box:
    @durable.step
    def same(self, x: T) -> T:
        return x

    @durable.workflow
    def flow(self, x: T) -> T:
        return x


def fine() -> int:
    return echo(1) + named(2) + echo.run(3).steps_executed + Box().same(4) + Box().flow(5)


async def afine() -> int:
    return await aecho(1) + 1


def wrong() -> None:
    echo(1) + "a"
    named(1) + "a"
    Box().same(1) + "a"


async def awrong() -> None:
    await echo(1)
"""

WRONG_SYNC = '    echo(1) + "a"'
WRONG_NAMED = '    named(1) + "a"'
WRONG_AWAIT = "    await echo(1)"
WRONG_METHOD = '    Box().same(1) + "a"'

CONFIG = """\
[tool.mypy]
strict = true
plugins = ["durable.mypy_plugin"]
"""


def mypy(folder: Path, config: str) -> subprocess.CompletedProcess[str]:
    (folder / "use.py").write_text(USER)
    (folder / "pyproject.toml").write_text(config)
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's durable, and its plugin
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "use.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def line_of(text: str) -> int:
    return USER.splitlines().index(text) + 1


@pytest.mark.slow
def test_the_plugin_types_a_generic_def_as_a_workflow(tmp_path: Path) -> None:
    checked = mypy(tmp_path, CONFIG)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    operator = 'error: Unsupported operand types for + ("int" and "str")  [operator]'
    awaited = ('error: Incompatible types in "await" (actual type "int", expected type '
               '"Awaitable[Any]")  [misc]')  # fmt: skip
    assert errors == [
        f"use.py:{line_of(WRONG_SYNC)}: {operator}",
        f"use.py:{line_of(WRONG_NAMED)}: {operator}",
        f"use.py:{line_of(WRONG_METHOD)}: {operator}",
        f"use.py:{line_of(WRONG_AWAIT)}: {awaited}",
    ], checked.stdout + checked.stderr
    assert checked.returncode == 1


@pytest.mark.slow
def test_without_the_plugin_mypy_takes_the_generic_def_for_async(tmp_path: Path) -> None:
    # What users who have not added the plugin see: the reason it exists.
    checked = mypy(tmp_path, CONFIG.replace('plugins = ["durable.mypy_plugin"]\n', ""))
    fine = line_of(
        "    return echo(1) + named(2) + echo.run(3).steps_executed + Box().same(4) + Box().flow(5)"
    )
    assert f"use.py:{fine}: error:" in checked.stdout, checked.stdout
