"""`durable rm` and `durable gc` synced nothing: each file of a run was
unlinked, and its folder removed, without an fsync of the folder, so a
power loss could keep any of those removals and lose any other (nothing
orders directory entries that were not synced): a run folder left with
its manifest and without its log (or a blob it names), the run listed as
there and refused as damaged. A removal now syncs the run's folder once
its manifest is unlinked, before anything else goes, and each folder once
its files are gone: after a power loss the run is gone or whole.

The power loss is emulated as the other tests do (tests/test_hunt41_last_record.py):
the child records each unlink, rmdir and folder fsync it makes; the test
then rebuilds every state a power loss may leave at every moment of the
removal (any subset of the removals no fsync of their folder covered yet
undone) from a copy of the store taken before, and checks each."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT
from tests.test_rm_crash import call, expected

pytestmark = pytest.mark.slow

# The command, with every unlink, rmdir and fsync of a folder noted (in
# order) in argv[1].
TRACED = """
import json, os, stat, sys
from durable._cli.main import main
out = open(sys.argv[1], "a")
def note(*event):
    out.write(json.dumps(event) + "\\n")
    out.flush()
unlink, rmdir, fsync = os.unlink, os.rmdir, os.fsync
def traced_unlink(path, *a, **k):
    unlink(path, *a, **k)
    note("unlink", os.fspath(path))
def traced_rmdir(path, *a, **k):
    rmdir(path, *a, **k)
    note("rmdir", os.fspath(path))
def traced_fsync(fd):
    fsync(fd)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        note("fsync", os.readlink(f"/proc/self/fd/{fd}"))
os.unlink, os.rmdir, os.fsync = traced_unlink, traced_rmdir, traced_fsync
sys.exit(main(sys.argv[2:]))
"""


def _states(events: list[list[str]], moments: range) -> list[set[str]]:
    """What a power loss may leave removed at each of those moments of the
    removal: any subset undone of the removals no later fsync of their
    folder covered."""
    out = []
    for k in moments:
        done = [(i, e[1]) for i, e in enumerate(events[:k]) if e[0] in ("unlink", "rmdir")]
        synced = {
            path for i, path in done
            if any(e == ["fsync", os.path.dirname(path)] for e in events[i + 1 : k])
        }  # fmt: skip
        loose = [p for _, p in done if p not in synced]
        for n in range(len(loose) + 1):
            for undone in itertools.combinations(loose, n):
                out.append({p for _, p in done if p not in undone})
    return out


@pytest.mark.parametrize("command", ["rm", "gc"])
def test_a_removal_cut_by_a_power_loss_leaves_the_run_whole_or_gone(
    tmp_path: Path, command: str
) -> None:
    root = tmp_path / "s"
    store = durable.open_store(root, blob_threshold=1024)
    assert call(store, "old") == expected()
    if command == "gc":  # gc --keep-last 1 keeps the newer run, removes "old"
        assert call(store, "new") == expected()
    run = root / "removed" / "old"
    files = sorted(str(p) for p in run.rglob("*") if p.is_file() and p.name != "lease")
    manifest = str(run / "run")
    assert manifest in files and str(run / "records.log") in files and len(files) >= 4
    trace = tmp_path / "trace"
    args = ["rm", "old"] if command == "rm" else ["gc", "--keep-last", "1"]
    done = subprocess.run(
        [sys.executable, "-c", TRACED, str(trace), *args, "--store", str(root)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert not run.exists()
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    half = []
    for removed in _states(events, range(len(events) + 1)):
        left = [f for f in files if f not in removed]
        if manifest in left and left != files:  # neither gone nor whole
            half.append(sorted(os.path.relpath(f, run) for f in left))
    assert not half, f"{len(half)} states neither whole nor gone, e.g. {half[0]}"
    # Once the command has returned, the removal is durable: no power loss brings the run back.
    assert all(manifest in removed for removed in _states(events, range(len(events), len(events) + 1)))
