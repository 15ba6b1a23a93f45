"""Records without a manifest are no run's: a fork killed before its
manifest (its last write) leaves the records it copied, and a call of that
run id is a new run. It must run its steps, never replay what was copied
(or what `mutate` made up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.clikit import REPO

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

executed: list[int] = []


@durable.step(name="piece")
def piece(i: int) -> int:
    executed.append(i)
    return i * 10


@durable.workflow(name="pieces")
def pieces() -> list[int]:
    return [piece(i) for i in range(4)]


# A fork with mutate, killed (SIGKILL, by itself) as it comes to write the
# fork's manifest: every record before the fork point is copied by then.
FORK_KILLED = """
import os, signal, sys
import durable
from durable._manage import fork
from tests.test_leftover_records import pieces
fork._write_fork_manifest = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
store = durable.open_store(sys.argv[1])
pieces.with_options(store=store).fork("R", at=3, new_run_id="F", mutate=lambda v: -1)
"""


@pytest.mark.slow
def test_a_call_of_a_fork_killed_before_its_manifest_runs_every_step(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")
    assert pieces.with_options(store=store, run_id="R")() == [0, 10, 20, 30]
    done = subprocess.run(
        [sys.executable, "-c", FORK_KILLED, str(tmp_path / "store")],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    with pytest.raises(durable.RunNotFoundError):
        pieces.with_options(store=store).resume("F")  # no run F
    executed.clear()
    with pytest.warns(UserWarning, match="left over"):
        run = pieces.with_options(store=store, run_id="F").run()
    assert (run.value, executed, run.steps_replayed) == ([0, 10, 20, 30], [0, 1, 2, 3], 0)
    executed.clear()
    assert pieces.with_options(store=store, run_id="F")() == [0, 10, 20, 30]
    assert executed == []  # its own records replay, as any run's
