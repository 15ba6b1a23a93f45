"""A process forked by the workflow body (a `multiprocessing` pool with the
fork start method) calling steps: the forked children copied the run's
context and the body's next position, so each would take the same
positions as its siblings and as the body, and write them into the run.
They are refused before executing anything; `loop_over` with a process
pool is the way that records each item once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable

SCRIPT = """
import concurrent.futures as cf, multiprocessing, os, sys
import durable

def note(name):
    with open(os.environ["COUNTS"], "a") as f:
        f.write(name + "\\n")

@durable.step
def square(i: int) -> int:
    note(f"square{i}")
    return i * i

@durable.step
def total(xs: list) -> int:
    note("total")
    return sum(xs)

@durable.workflow(run_id="forked")
def forked(way: str) -> int:
    ctx = multiprocessing.get_context("fork")
    if way == "pool":
        with ctx.Pool(2) as pool:
            return total(pool.map(square, range(4)))
    with cf.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        return total(durable.loop_over(square, range(4), executor=pool))

if __name__ == "__main__":
    try:
        print("VALUE", forked.with_options(restart=sys.argv[1] == "loop_over")(sys.argv[1]))
    except durable.ConfigurationError as refused:
        print("REFUSED", refused)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no fork")
def test_steps_called_in_a_forked_child_of_the_body_are_refused(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "forked.py").write_text(SCRIPT)
    log = tmp_path / "counts"
    env = dict(child_env, COUNTS=str(log))

    def run(way: str) -> str:
        done = subprocess.run(
            [sys.executable, "forked.py", way], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run("pool")
    assert "REFUSED step 'square' was called in a process forked from" in out
    assert "durable.loop_over" in out
    assert not log.exists()  # nothing executed, in any child
    store = durable.open_store(tmp_path / "store")
    assert store.load_records("forked.forked", "forked") == {}  # no step recorded

    assert "VALUE 14" in run("loop_over")
    assert Counter(log.read_text().split()) == {
        "square0": 1, "square1": 1, "square2": 1, "square3": 1, "total": 1,
    }
