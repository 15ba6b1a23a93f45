"""The 55th new-user walk, across Pythons: a run whose arguments hold a
`pathlib.Path` started on 3.10-3.12 was another run on 3.13 (its derived
id and its argument digests kinded by `pathlib._local.PosixPath`, where
the README says fingerprints are identical on all four), so its steps ran
again; a Path default changed the step's fingerprint there too (that one:
`path_defaults` in tests/fp_corpus.py). Real interpreters, each one this
machine has (pyenv's, or on PATH), in processes of their own."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .test_fingerprint_golden import VERSIONS, find_interpreter

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

FLOW = """\
import os
import sys
from pathlib import Path

import durable


@durable.step
def read(p: Path, out: Path) -> str:
    with open("count", "a") as f:
        f.write(f"read 3.{sys.version_info[1]}\\n")
    return f"{p.name}->{out.name}"


@durable.workflow
def wf(p: Path, out: Path = Path("o.csv")) -> str:
    got = read(p, out)
    if os.environ.get("STOP"):
        durable.suspend("stopped on purpose")
    return got


if __name__ == "__main__":
    try:
        run = wf.run(Path("data") / "a.csv")
        print("value", run.run_id, run.value, run.steps_executed)
    except durable.Suspended as s:
        print("suspended", s.run_id)
"""


def _run(python: str, folder: Path, **env: str) -> list[str]:
    # The interpreter's own standard library, this checkout and the pure-Python
    # dependencies of the test's environment (an extension built for another
    # version is not even looked at: durable falls back without isal, msgpack
    # to its pure-Python reader).
    path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    full = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", "DURABLE_STORE": "store", **env}
    done = subprocess.run([python, "flow.py"], cwd=folder, env=full, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_run_with_path_arguments_resumes_on_every_python(tmp_path: Path) -> None:
    """Suspended on this Python, resumed on each other one (the first
    resumes, the rest call the completed run again): one run, one
    execution of its step."""
    others = [p for v in VERSIONS if (p := find_interpreter(v)) and v != f"3.{sys.version_info[1]}"]
    if not others:
        pytest.skip("no other CPython 3.10-3.13 on this machine")
    (tmp_path / "flow.py").write_text(FLOW)
    said, run_id = _run(sys.executable, tmp_path, STOP="1")
    assert said == "suspended"
    for python in others:
        assert _run(python, tmp_path) == ["value", run_id, "a.csv->o.csv", "0"], python
    assert (tmp_path / "count").read_text().splitlines() == [f"read 3.{sys.version_info[1]}"]
    assert sorted(os.listdir(tmp_path / "store" / "flow.wf")) == [run_id]
