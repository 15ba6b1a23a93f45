"""A step cache shared by two Pythons (one store on S3 or a shared disk, a
laptop on 3.11 and a server on 3.13): the standard library the step calls
is another one, and so may be its output (`ast.dump` prints other fields
from one minor version to the next). An entry one interpreter wrote must
not be served to another: the cache key counts the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.scripts import ROOT
from tests.test_fingerprint_golden import VERSIONS, find_interpreter

pytestmark = pytest.mark.slow

SCRIPT = """
import ast
import os

import durable


@durable.step(cache=True)
def outline(src: str) -> str:
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("x")
    return ast.dump(ast.parse(src))


print(outline("def f(): pass"))
"""


def _other_python() -> str | None:
    here = "{}.{}".format(*sys.version_info[:2])
    for version in reversed(VERSIONS):  # the farthest first: its ast.dump differs most
        if version != here and (found := find_interpreter(version)) is not None:
            return found
    return None


def _run(python: str, folder: Path) -> str:
    # This checkout and this environment's pure-Python packages (msgpack and
    # ISA-L fall back to their Python code on another interpreter).
    path = os.pathsep.join([str(folder), str(ROOT), sysconfig.get_paths()["purelib"]])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    env |= {"DURABLE_STORE": str(folder / "store"), "COUNT_FILE": str(folder / "count")}
    (folder / "outline.py").write_text(SCRIPT)
    done = subprocess.run(
        [python, "outline.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )
    missing = "ImportError" in done.stderr or "ModuleNotFoundError" in done.stderr
    if python != sys.executable and missing:  # a package with no pure-Python fallback
        pytest.skip(f"{python} cannot import this environment's packages: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_entry_another_python_wrote_is_not_served(tmp_path: Path) -> None:
    other = _other_python()
    if other is None:
        pytest.skip("no CPython of another minor version on this machine")
    count = tmp_path / "count"
    first = _run(sys.executable, tmp_path)
    assert count.read_text() == "x"
    second = _run(other, tmp_path)
    own = subprocess.run(
        [other, "-c", "import ast; print(ast.dump(ast.parse('def f(): pass')))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert second == own  # what that Python's ast.dump says, not the other's
    assert count.read_text() == "xx"  # computed again there
    # Each Python keeps its own entry: the first is served its own again.
    assert _run(sys.executable, tmp_path) == first and count.read_text() == "xx"
