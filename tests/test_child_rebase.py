"""A parent resumed with `rebase=True` (`--rebase-checkpoint`) rebases the
child run it enters too, as a parent under `on_change="rerun"` re-runs what
changed in its children: its definition covers the children's code, so the
user vouched for their changes as well. Real processes: the first run fails
inside the child, the child's code is edited, a second process resumes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import PY

FLOW = '''
import os
import durable

def note(name):
    with open(os.environ["COUNTS"], "a") as f:
        f.write(name + "\\n")

@durable.step
def c1(x):
    note("c1")
    return x + INCREMENT

@durable.step
def c2(x):
    note("c2")
    if os.environ.get("FAIL"):
        raise RuntimeError("c2 fails")
    return x * 2

@durable.workflow
def child(x: int) -> int:
    return c2(c1(x))

@durable.step
def p0(x):
    note("p0")
    return x

@durable.workflow
def parent(x: int) -> int:
    return child(p0(x)) + 1
'''


def test_a_rebased_parent_rebases_the_child_it_resumes(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    script = tmp_path / "flow.py"
    script.write_text(FLOW.replace("INCREMENT", "1"))
    env = {**child_env, "COUNTS": str(tmp_path / "counts")}
    run = [PY, "-m", "durable", "run", "flow.py:parent", "--run-id", "p"]
    failed = subprocess.run(
        [*run, "--var", "x=1"], cwd=tmp_path, env={**env, "FAIL": "1"}, capture_output=True
    )
    assert failed.returncode == 1
    script.write_text(FLOW.replace("INCREMENT", "5"))  # c1, in the child, changed
    done = subprocess.run(
        [*run, "--resume", "--rebase-checkpoint"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"  # c1's recorded 2, doubled, plus one
    assert (tmp_path / "counts").read_text().split() == ["p0", "c1", "c2", "c2"]


CAUGHT = '''
import os
import durable

def note(name):
    with open(os.environ["COUNTS"], "a") as f:
        f.write(name + "\\n")

@durable.step
def a():
    note("a")
    return 1

@durable.step
def b():
    note("b")
    return 2

@durable.step
def boom():
    note("boom")
    if not os.environ.get("FLIP"):
        raise RuntimeError("boom fails")
    return 0

@durable.workflow
def child() -> int:
    value = b() if os.environ.get("FLIP") else a()  # another step at position 0
    boom()
    return value

@durable.step
def after():
    note("after")
    return 3

@durable.workflow
def parent() -> int:
    try:
        value = child()
    except durable.DurableError:  # swallowing the child's refusal does not let the body go on
        value = -1
    return after() + value
'''


def test_a_refusal_of_a_child_run_is_final_for_its_parent(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "flow.py").write_text(CAUGHT)
    env = {**child_env, "COUNTS": str(tmp_path / "counts")}
    run = [PY, "-m", "durable", "run", "flow.py:parent", "--run-id", "p"]
    failed = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True)
    assert failed.returncode == 1  # boom's RuntimeError, not caught
    counts = tmp_path / "counts"
    assert counts.read_text().split() == ["a", "boom"]
    counts.unlink()
    refused = subprocess.run(
        [*run, "--resume"], cwd=tmp_path, env={**env, "FLIP": "1"}, capture_output=True, text=True
    )
    # The child's NondeterminismError ends the parent (exit 1: it names the
    # child run), which neither completes nor runs after() with a fallback.
    assert refused.returncode == 1, refused.stderr
    assert "NondeterminismError: run 'p.0'" in refused.stderr
    assert not counts.exists()
