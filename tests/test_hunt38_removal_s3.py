"""A removal (`durable rm`) killed part way (`kill -9`) on S3, as on a local
folder (test_removal_cut_short): a run with many objects (records in
segments and single objects, blobs, a cancel marker, manifest generations)
deleted a batch at a time, cut after its n-th batch. What is left must be
no run: `durable runs` lists nothing, `resume` finds no run, and a call of
that run id runs every step once, replaying none of the leftovers; then a
second call replays the new run's own records."""

from __future__ import annotations

import subprocess
import sys

import pytest

import durable
from durable._manage.cancel import cancel_run
from durable._manage.runs import list_runs
from durable._storage.keys import generation_of
from tests.clikit import REPO

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")

executed: list[int] = []
BIG = 64  # bytes: over the store's blob threshold below, so every output is a blob


@durable.step(name="big")
def big(i: int) -> str:
    executed.append(i)
    return str(i) * BIG


@durable.workflow(name="many")
def many(fail: bool = False) -> list[str]:
    done = [big(i) for i in range(6)]
    if fail:
        raise RuntimeError("failed after its steps")
    return done


# `durable rm` of the run, one key a batch, killed (SIGKILL, by itself) once
# its n-th key is deleted.
RM_KILLED = """
import os, signal, sys
import durable
from durable._storage import removal
from durable._storage.objects import FsspecStore
removal.BATCH = 1
real, calls = FsspecStore.delete, []
def delete(self, keys):
    keys = list(keys)
    real(self, keys)
    calls.extend(k for k in keys if "/lease/" not in k)  # not the lease's own upkeep
    if len(calls) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
FsspecStore.delete = delete
from tests.test_hunt38_removal_s3 import many
many.with_options(store=durable.open_store(sys.argv[1], blob_threshold=16)).delete("R")
"""


def _open(url: str) -> durable.Store:
    return durable.open_store(url, blob_threshold=16)


@pytest.mark.slow
def test_an_s3_removal_killed_after_its_manifest_leaves_no_run(s3_url: str) -> None:
    store = _open(s3_url)
    wf = many.with_options(store=store, run_id="R")
    with pytest.raises(RuntimeError):
        wf.run(fail=True)
    cancel_run(store, "many", "R")  # a cancel marker to remove as well
    keys = store.list("many/R/")
    assert any("/blobs/" in k for k in keys) and any("/segments/" in k for k in keys)
    cut = sum(generation_of(k) is not None for k in keys)  # those go first
    done = subprocess.run(
        [sys.executable, "-c", RM_KILLED, s3_url, str(cut)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    store = _open(s3_url)  # another process's view
    wf = many.with_options(store=store, run_id="R")
    assert [r.run_id for r in wf.runs()] == []
    assert list_runs(store) == []
    with pytest.raises(durable.RunNotFoundError):
        wf.resume("R")
    executed.clear()
    with pytest.warns(UserWarning, match="left over"):
        run = wf.run()
    assert (executed, run.steps_replayed) == ([0, 1, 2, 3, 4, 5], 0)
    assert run.value == [str(i) * BIG for i in range(6)]
    executed.clear()
    again = _open(s3_url)
    assert many.with_options(store=again).resume("R").value == run.value
    assert executed == []
