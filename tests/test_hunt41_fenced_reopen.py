"""A local run's folder removed by hand under its live holder, between the
holder's lease check and its record's append: the append found its open
log deleted and wrote to a new one at the path, remaking the removed
folder, after the lease was lost (the lease file went with the folder). A
run started afresh there later would find that record, a value of the run
removed. The append to a log other than the one it checked the lease for
now checks the lease again, under that log's lock, and writes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

HOLDER = """
import os, sys
import durable
from durable._storage import base

pause = [1] if os.environ.get("PAUSE") == "manifest" else []
real_guard = base.Store.guard

def guard(self, workflow, run_id, *, now=False):
    real_guard(self, workflow, run_id, now=now)
    if pause:  # the check before that write passed: stop right after it
        pause.clear()
        print("CHECKED", flush=True)
        sys.stdin.readline()

base.Store.guard = guard

@durable.step(name="work")
def work(i: int) -> object:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == 1 and os.environ.get("PAUSE") in ("record", "blob"):
        pause.append(1)
    return i if os.environ.get("PAUSE") != "blob" else "x" * 100 * i  # a blob at step 1

@durable.workflow(name="fence", run_id="shared")
def fence() -> list:
    return [work(i) for i in range(3)]

try:
    fence.with_options(store=durable.open_store(sys.argv[1], blob_threshold=64)).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, flush=True)
    sys.exit(4)
print("DONE", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pause", "ran", "lost_at"),
    [("record", ["0", "1"], "1"), ("blob", ["0", "1"], "1"), ("manifest", [], "None")],
)
def test_a_write_after_the_run_folder_was_removed_makes_nothing_again(
    tmp_path: Path, pause: str, ran: list[str], lost_at: str
) -> None:
    """After the lease check of `record`: step 1's record; `blob`: its
    output's blob; `manifest`: the run's first manifest (its start)."""
    script, root, log = tmp_path / "holder.py", tmp_path / "store", tmp_path / "ran.log"
    script.write_text(HOLDER)
    log.write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), PAUSE=pause)
    holder = subprocess.Popen(
        [sys.executable, str(script), str(root)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "CHECKED"
        shutil.rmtree(root / "fence" / "shared")  # by hand, under the live holder
        said, _ = holder.communicate("\n", timeout=120)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert (holder.returncode, said.split()) == (4, ["LEASE_LOST", lost_at])
    assert log.read_text().split() == ran  # no step started after the loss
    assert not (root / "fence" / "shared").exists()  # nothing written, no folder made again
