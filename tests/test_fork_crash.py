"""`durable fork` killed (SIGKILL) at every write it makes: the half-made
fork is never taken for a run (its manifest is the fork's last write), the
source run is untouched, and the same fork made again succeeds (it removes
what was left: refused before as "already exists", hunt56), its resume
executing only the positions after the fork point."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from tests.clikit import killed_at

pytestmark = pytest.mark.slow

# The command, killed by itself at its K-th store write (argv[1]): the same
# moment a `kill -9` from outside could land, reached every time.
KILLED_AT = """
import os, signal, sys
from durable._storage import base, local
from durable._cli.main import main
at, seen = int(sys.argv[1]), [0]
def counted(fn):
    def write(*args, **kwargs):
        seen[0] += 1
        if seen[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return write
for cls in (base.Store, local.LocalStore):
    for name in ("save_record", "put_blob", "save_manifest", "create", "put"):
        if name in vars(cls):
            setattr(cls, name, counted(vars(cls)[name]))
sys.exit(main(sys.argv[2:]))
"""

executed: list[int] = []


@durable.step(name="piece")
def piece(i: int) -> str:
    executed.append(i)
    return str(i) * (3000 if i % 2 == 0 else 3)  # every other one a blob


@durable.workflow(name="source")
def source() -> list[str]:
    return [piece(i) for i in range(6)]


def expected() -> list[str]:
    return [str(i) * (3000 if i % 2 == 0 else 3) for i in range(6)]


def test_a_fork_killed_at_every_write_can_be_removed_and_made_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    killed = 0
    for at in range(1, 40):
        root = tmp_path / f"store-{at}"
        store = durable.open_store(root, blob_threshold=1024)
        assert source.with_options(store=store, run_id="R")() == expected()
        fork = ["fork", "R", "--at", "4", "--new-run-id", "F", "--store", str(root)]
        if not killed_at(KILLED_AT, at, *fork):
            break
        killed += 1
        executed.clear()
        store = durable.open_store(root, blob_threshold=1024)
        with pytest.raises(durable.RunNotFoundError):
            source.with_options(store=store).resume("F")  # never taken for a run
        assert main(fork) == 0, (at, capsys.readouterr().err)
        run = source.with_options(store=store).resume("F")
        assert (run.value, executed) == (expected(), [4, 5]), at
        executed.clear()
        assert source.with_options(store=store, run_id="R")() == expected()
        assert executed == [], at  # the source untouched
    else:
        raise AssertionError("the fork never finished")
    assert killed >= 5  # the blobs, the records and the manifest at least
