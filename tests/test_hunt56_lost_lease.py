"""A holder stopped (SIGSTOP) past its lease on an object store while
another process takes the run over, then continued: `LeaseLostError` says
it "must not execute another step", and nothing may be written for the run
after the takeover. hunt56's campaign found two ways it went on:

- a `loop_over` on a thread pool: the items queued to the executor before
  the stop started once the holder was continued (a worker takes the next
  one as it finishes its own, with no look at the lease), and ran a second
  time, beside the new holder's tries;
- a child run entered in the stall between the parent's last look at its
  lease and the child's lease: the continued holder took the child's lease
  and ran its body again, writing the child's manifest (its status) twice.

The store here is an object store over a folder (`tests.keystore.Folder`:
the same `ObjectLease` as S3's), the taker this test's own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOWS = """
import os, signal, sys, threading
from concurrent.futures import ThreadPoolExecutor
import durable
from tests.keystore import Folder

def ran(what):
    with open(os.environ["RAN"], "a") as f:
        f.write(f"{os.getpid()} {what}\\n")

def stop_here(why):
    if os.environ.get("STOP") == why:
        os.environ.pop("STOP")
        print("STOPPING", flush=True)
        # At once: the process's other threads stop too, this one first.
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)

if os.environ.get("HOLD"):  # item 1 tells item 0 it runs through a pipe
    os.environ["BEGAN"] = "%d %d" % os.pipe()

def hold(i: int) -> None:
    # The holder's items 0 and 1: 0 stops the process once 1 runs too, with
    # items 2 and 3 waiting in the executor's queue; 1 returns at once when
    # continued (a line comes on stdin once the run was taken over).
    if not os.environ.get("HOLD"):
        return
    r, w = map(int, os.environ["BEGAN"].split())
    if i == 0:
        os.read(r, 1)
        stop_here("item")
    elif i == 1:
        os.write(w, b"1")
        sys.stdin.readline()

def item(i: int) -> int:
    ran(f"item{i}")
    hold(i)
    return i * 10

@durable.workflow(name="pooled", run_id="r")
def pooled() -> int:
    with ThreadPoolExecutor(2) as pool:
        return sum(durable.loop_over(item, range(4), executor=pool, checkpoint_items=True))

@durable.step
def inner(i: int) -> int:
    ran(f"inner{i}")
    return i

@durable.step
def first() -> int:
    ran("first")
    return 1

@durable.workflow(name="parent", run_id="p")
def parent(n: int = 3) -> int:
    @durable.workflow(name="kid")
    def kid() -> int:  # reads the parent's argument: entered again, it runs its body (its steps replay)
        return sum(inner(i) for i in range(1, n))

    return first() + kid()

class Pausing(Folder):
    # The stall lands after the parent's look at its lease, before the child's is taken.
    def create(self, key, data):
        if key.startswith("kid/"):
            stop_here("child")
        return super().create(key, data)

def store():
    return durable.open_store(Pausing(os.environ["FOLDER"]), lease_ttl=1.0)

def go(flow):
    try:
        print("VALUE", flow.with_options(store=store(), wait=60)(), flush=True)
    except durable.LeaseLostError as e:
        print("LEASE_LOST", e, flush=True)
"""


def _stopped(pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the state in /proc is the only signal there is
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("T"):
            return
        time.sleep(0.01)
    raise AssertionError("the holder never stopped")


def _taken_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flow: str, stop: str) -> tuple[str, list[str], dict[str, bytes], dict[str, bytes]]:
    """The holder of `flow` stopped at `stop`, the run taken over and
    completed here, the holder continued: what it said, the executions
    (`pid what`), and the store's files before and after it went on."""
    (tmp_path / "lost56.py").write_text(FLOWS)
    ran, folder = tmp_path / "ran", tmp_path / "store"
    monkeypatch.setenv("RAN", str(ran))
    monkeypatch.setenv("FOLDER", str(folder))
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", STOP=stop, HOLD="1")
    code = f"import lost56; lost56.go(lost56.{flow})"
    holder = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert holder.stdout.readline() == "STOPPING\n"
        _stopped(holder.pid)
        import lost56  # type: ignore[import-not-found]

        lost56.go(getattr(lost56, flow))  # waits out the lease, takes the run over, completes it
        before = _files(folder)
        holder.stdin.write("\n")
        holder.stdin.flush()
        os.kill(holder.pid, signal.SIGCONT)
        said, _ = holder.communicate(timeout=60)
    finally:
        sys.modules.pop("lost56", None)
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait()
    mine = {str(holder.pid): "holder", str(os.getpid()): "taker"}
    runs = [f"{mine[pid]} {what}" for pid, what in (line.split() for line in ran.read_text().splitlines())]
    return said, runs, before, _files(folder)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_continued_holder_starts_no_queued_item_of_a_thread_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said, runs, before, after = _taken_over(tmp_path, monkeypatch, "pooled", "item")
    assert "VALUE 60" in capsys.readouterr().out  # the taker's
    assert said.startswith("LEASE_LOST"), said
    # Items 0 and 1 were running at the stop and finish; 2 and 3 waited in the queue.
    expected = ["holder item0", "holder item1"] + [f"taker item{i}" for i in range(4)]
    assert sorted(runs) == expected, runs
    assert after == before


def test_a_continued_holder_enters_no_child_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said, runs, before, after = _taken_over(tmp_path, monkeypatch, "parent", "child")
    assert "VALUE 4" in capsys.readouterr().out
    assert said.startswith("LEASE_LOST"), said
    assert runs == ["holder first", "taker inner1", "taker inner2"], runs
    # Not a record, a manifest or a segment of either run; the child's lease
    # (claimed, then given up with its released marker) decides nothing.
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert all("/lease/" in k for k in changed), changed
