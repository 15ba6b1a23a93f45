"""A resume whose items moved (swapped, rotated) rewrites each kept result
at its item's new index. Killed (SIGKILL) at any of those writes, no
result kept only at its old index is lost: the next resume executes no
item that had finished, and no kept result serves two equal items."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkcli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

# Killed by itself at its K-th item write (KILL_WRITE), the moment a kill -9
# from outside could land; or once STOP_AT items are kept, before the block
# record. Each execution of an item appends its name to the log.
SCRIPT = """
import concurrent.futures as cf, os, signal, sys, threading, time
import durable
from durable._storage import base

LOG, STORE = sys.argv[1], sys.argv[2]
kill_at, seen = int(os.environ.get("KILL_WRITE", "0")), [0]
replace = base.Store.replace_record

def counted(self, *args, **kwargs):
    seen[0] += 1
    if seen[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return replace(self, *args, **kwargs)

base.Store.replace_record = counted

@durable.step(retries=3, retry_delay=0)
def work(x):
    if x == "sb" and os.environ.get("HOLD_SB"):
        threading.Event().wait()  # writes nothing at its index until the kill
    with open(LOG, "a") as f:
        f.write(x + "\\n")
    tried = open(LOG).read().split()
    if os.environ.get("KILL_TRIES") and tried.count(x) == 2:
        # fa in its second try (its first is kept) dies once the other item
        # kept something too: sb its first try, b its result (`stop`).
        if x == "fa":
            while not os.path.exists(LOG + ".ready"):
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGKILL)
        open(LOG + ".ready", "w").close()
        threading.Event().wait()
    if x == "fa" and tried.count("fa") == int(os.environ.get("KILL_FA_AT", "0")):
        os.kill(os.getpid(), signal.SIGKILL)
    if x == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    # fa always fails; sb at its first three executions only.
    if x == "fa" or (x == "sb" and tried.count("sb") < 4):
        raise ValueError(x)
    return x * 2

def stop(progress):
    if os.environ.get("KILL_TRIES"):
        open(LOG + ".ready", "w").close()
    if progress.done == int(os.environ.get("STOP_AT", "0")):
        os.kill(os.getpid(), signal.SIGKILL)

@durable.workflow(store=STORE, run_id="r")
def wf():
    items = os.environ["ITEMS"].split(",")
    with cf.ThreadPoolExecutor(2) as pool:
        return durable.loop_over(work, items, executor=pool, checkpoint_items=True, progress=stop)

print(wf())
"""


def run(tmp: Path, items: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The script in a process of its own, forked from an interpreter that
    imported durable once (`forkcli`: 45 fresh Pythons a module before)."""
    script = tmp / "moves.py"
    script.write_text(SCRIPT)
    full = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_PROGRESS": "0", "ITEMS": items, **env}
    argv = [str(script), str(tmp / "log"), str(tmp / "store")]
    if forkcli.forkable(argv, full):
        return forkcli.run(argv, tmp, full, 120)
    return subprocess.run([sys.executable, *argv], env=full, capture_output=True, text=True, timeout=120)


def executed(tmp: Path) -> list[str]:
    return (tmp / "log").read_text().splitlines()


@pytest.mark.parametrize("order", ["b,a,c", "c,a,b", "b,c,a"])
@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_kill_while_moved_results_are_rewritten_loses_none(
    tmp_path: Path, order: str, kill_at: int
) -> None:
    first = run(tmp_path, "a,b,c", STOP_AT="3")
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert sorted(executed(tmp_path)) == ["a", "b", "c"]
    moved = run(tmp_path, order, KILL_WRITE=str(kill_at))
    # The writes of the moves come first; a kill past them ends nothing.
    assert moved.returncode in (0, -signal.SIGKILL), moved.stderr
    last = run(tmp_path, order)
    assert last.returncode == 0, last.stderr
    assert last.stdout.strip() == str([x * 2 for x in order.split(",")])
    assert sorted(executed(tmp_path)) == ["a", "b", "c"]  # no finished item ran again


@pytest.mark.parametrize("other", ["sb", "b"])  # its failed try kept, or its result
@pytest.mark.parametrize("kill_at", [1, 2])
def test_a_kill_while_moved_tries_are_rewritten_keeps_each_items_budget(
    tmp_path: Path, kill_at: int, other: str
) -> None:
    first = run(tmp_path, f"fa,{other}", KILL_TRIES="1")
    assert first.returncode == -signal.SIGKILL, first.stderr
    # fa: its kept try and the one cut short; sb: its kept try and the one
    # waiting; b: its one execution, kept.
    expected = ["fa", "fa", "sb", "sb"] if other == "sb" else ["b", "fa", "fa"]
    assert sorted(executed(tmp_path)) == expected
    moved = run(tmp_path, f"{other},fa", KILL_WRITE=str(kill_at))
    assert moved.returncode == -signal.SIGKILL, moved.stderr
    last = run(tmp_path, f"{other},fa")
    assert "ValueError: fa" in last.stderr, last.stderr
    # fa's budget of 4 tries (retries=3): the kept one, the one the kill cut
    # short (never kept: made again) and 3 more; the killed resume made none.
    assert executed(tmp_path).count("fa") == 5


def test_a_result_left_at_its_old_index_by_a_move_serves_one_equal_item(tmp_path: Path) -> None:
    """A moved result is kept at its new index and, until the item now at
    its old one writes there, at the old one too: the two copies are one
    result, and a later list holding the item twice runs it once more."""
    first = run(tmp_path, "p,q,a", STOP_AT="3")
    assert first.returncode == -signal.SIGKILL, first.stderr
    moved = run(tmp_path, "a,q,die")  # a moves from 2 to 0; die never writes at 2
    assert moved.returncode == -signal.SIGKILL, moved.stderr
    last = run(tmp_path, "a,q,a")
    assert last.returncode == 0, last.stderr
    assert last.stdout.strip() == str(["aa", "qq", "aa"])
    assert sorted(executed(tmp_path)) == ["a", "a", "die", "p", "q"]


def test_an_item_moved_back_goes_on_with_its_newest_tries(tmp_path: Path) -> None:
    """fa's tries, moved from index 0 to 1, grow there; its old copy at 0
    stays. Back at 0, fa goes on with the newest count, not the old copy's."""
    first = run(tmp_path, "fa,sb", KILL_TRIES="1")  # fa: 1 try kept, 1 cut short
    assert first.returncode == -signal.SIGKILL, first.stderr
    moved = run(tmp_path, "sb,fa", KILL_FA_AT="4", HOLD_SB="1")  # fa: 1 more kept, 1 cut short
    assert moved.returncode == -signal.SIGKILL, moved.stderr
    last = run(tmp_path, "fa,sb")
    assert "ValueError: fa" in last.stderr, last.stderr
    # 4 tries of fa's budget kept or made, and the 2 the kills cut short.
    assert executed(tmp_path).count("fa") == 6
