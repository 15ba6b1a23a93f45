"""`durable rm` and `durable gc` killed (SIGKILL) at every file they delete:
the run is left whole, gone, or part-removed, and the next call of the
workflow returns the right value either way, by replaying or by running
afresh, never refusing it as damaged (a record or manifest left naming a
blob already deleted)."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests.clikit import killed_at

pytestmark = pytest.mark.slow

# The command, killed by itself at its K-th unlink (argv[1]): the same
# moment a `kill -9` from outside could land, reached every time.
KILLED_AT = """
import os, signal, sys
from durable._cli.main import main
at, seen, unlink = int(sys.argv[1]), [0], os.unlink
def counted(*args, **kwargs):
    seen[0] += 1
    if seen[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return unlink(*args, **kwargs)
os.unlink = counted
sys.exit(main(sys.argv[2:]))
"""

executed: list[int] = []


@durable.step(name="part")
def part(i: int) -> str:
    executed.append(i)
    return str(i) * (3000 if i != 1 else 3)  # two of three are blobs


@durable.workflow(name="removed")
def removed() -> list[str]:
    return [part(i) for i in range(3)]


def expected() -> list[str]:
    return ["0" * 3000, "111", "2" * 3000]


def call(store: durable.Store, run_id: str) -> list[str]:
    return removed.with_options(store=store, run_id=run_id)()


@pytest.mark.parametrize("command", ["rm", "gc"])
def test_a_removal_killed_at_every_unlink_never_leaves_a_damaged_run(
    tmp_path: Path, command: str
) -> None:
    killed = 0
    for at in range(1, 100):
        root = tmp_path / f"store-{at}"
        store = durable.open_store(root, blob_threshold=1024)
        assert call(store, "old") == expected()
        if command == "gc":  # gc --keep-last 1 keeps the newer run, removes "old"
            assert call(store, "new") == expected()
        args = ["rm", "old"] if command == "rm" else ["gc", "--keep-last", "1"]
        if not killed_at(KILLED_AT, at, *args, "--store", str(root)):
            break
        killed += 1
        executed.clear()
        # Whole (replayed: nothing runs) or gone (every step runs once).
        assert call(durable.open_store(root, blob_threshold=1024), "old") == expected()
        assert executed in ([], [0, 1, 2]), (at, executed)
    else:
        raise AssertionError("the removal never finished")
    assert killed >= 4  # the records, the manifest and both blobs at least
