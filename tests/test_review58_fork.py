"""review58: a process forked by a step that holds the run's lease (a
step calling `os.fork()` whose child forgets `os._exit` and returns, a
daemonizing tool) is no holder of the run. A local lease gave the child
nothing (`lease._close_in_child`); an object store's lease (S3, a key
store of the user's) went on in the child with its parent's token: it
recorded the step's output (the child's 0) and the run's manifest (failed
at its next step), the parent replayed the child's record and lost the
run at its own manifest; a child renewing or releasing the lease would
have handed the parent's run to another process.
Now the child's object lease is lost at the fork, as the local one is:
its first write raises `LeaseLostError`. One fork, in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import durable
from tests.keystore import Folder

pytestmark = pytest.mark.slow


LOG: list[str] = []  # the file `after` appends its pid to


@durable.step
def spawn() -> int:
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)  # the child's run goes first
    return pid  # 0 in the child, which goes on with the run


@durable.step
def after(child: int) -> int:
    with open(LOG[0], "a") as f:
        f.write(f"{os.getpid()}\n")
    return child


@durable.workflow
def forking() -> int:
    return after(spawn())


@pytest.mark.parametrize("where", ["keys", "folder"])
def test_a_child_forked_in_a_step_holds_no_lease(where: str, tmp_path: Path) -> None:
    log, outcome = tmp_path / "after", tmp_path / "child"
    LOG[:] = [str(log)]
    store = durable.open_store(Folder(tmp_path / "keys") if where == "keys" else str(tmp_path / "s"))
    parent = os.getpid()
    try:
        value = forking.with_options(store=store, run_id="r")()
    except BaseException as e:
        if os.getpid() != parent:  # the child: its outcome told, never back into pytest
            outcome.write_text(type(e).__name__ + ": " + str(e))
            os._exit(0)
        raise
    if os.getpid() != parent:
        outcome.write_text(f"returned {value}")
        os._exit(0)
    # Before (keys): the child recorded spawn's 0 and the run failed with its ConfigurationError
    # at `after`; the parent took that 0 and ended in LeaseLostError at its own manifest.
    assert outcome.read_text().startswith("LeaseLostError: run 'r': this process lost its lease")
    assert log.read_text().split() == [str(parent)]  # `after` once, in the holder
    assert value > 0  # the parent's own answer (the child's pid), not the child's record (0)
    assert forking.with_options(store=store, run_id="r")() == value  # completed, by the parent
