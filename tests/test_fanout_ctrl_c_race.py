"""A plain Ctrl-C landing once a thread's try has returned to the executor,
which has not yet set the future it made (and the workflow thread may not
even hold that future: a SIGINT in `executor.submit`, which waits for a new
thread to start, lost it): the item ran to its end, so a block that
checkpoints its items keeps it, and the resume does not run it a second
time. The Ctrl-C is a real SIGINT sent to the workflow's thread while the
worker thread is held in that window."""

from __future__ import annotations

import concurrent.futures as cf
import concurrent.futures.thread
import signal
import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any

import pytest

import durable

_WORK_ITEM = concurrent.futures.thread._WorkItem.run.__code__
_FUTURES = cf.Future.set_result.__code__.co_filename


def _hold_after_the_try(main: int, stopping: threading.Event) -> Any:
    """A profile hook for the pool's threads: once the first try returns to
    the executor, SIGINT to the workflow thread, then hold the worker until
    the block said that no other item starts."""
    fired = threading.Event()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        back = frame.f_back
        if event == "return" and back is not None and back.f_code is _WORK_ITEM:
            if frame.f_code.co_filename != _FUTURES and not fired.is_set():  # not set_result
                fired.set()
                signal.pthread_kill(main, signal.SIGINT)
                stopping.wait(20)

    return hook


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_an_item_that_ended_just_before_the_ctrl_c_is_kept(local_store: durable.Store) -> None:
    runs: Counter[int] = Counter()

    @durable.step
    def work(i: int) -> int:
        runs[i] += 1
        return i * 10

    @durable.workflow(store=local_store, run_id="r")
    def fan() -> list[int]:
        with cf.ThreadPoolExecutor(1) as pool:
            return durable.loop_over(work, [0, 1], executor=pool, checkpoint_items=True)

    stopping = threading.Event()
    said = sys.stderr.write

    def write(text: str) -> int:
        if "no other item starts" in text:
            stopping.set()
        return said(text)

    threading.setprofile(_hold_after_the_try(threading.get_ident(), stopping))
    try:
        with pytest.MonkeyPatch.context() as patch, pytest.raises(KeyboardInterrupt):
            patch.setattr(sys.stderr, "write", write)
            fan()
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        stopping.set()
    assert runs == {0: 1}  # item 1 never started
    assert fan() == [0, 10]
    assert runs == {0: 1, 1: 1}  # item 0, finished before the Ctrl-C, was kept


_IN_WAIT = """
import concurrent.futures as cf, concurrent.futures._base as base, signal, sys, threading
import durable

GO = threading.Event()
ENTER = base._AcquireFutures.__enter__.__code__
fired = []


def hook(frame, event, arg):
    # One future's condition taken by the block's wait, the next not yet.
    if event == "c_return" and frame.f_code is ENTER and not fired:
        fired.append(True)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


@durable.step
def work(i):
    GO.wait(30)
    return i


pool = cf.ThreadPoolExecutor(2)


@durable.workflow(store=sys.argv[1], run_id="r")
def fan():
    sys.setprofile(hook)
    try:
        return durable.loop_over(work, [0, 1], executor=pool)
    finally:
        sys.setprofile(None)


try:
    fan()
except KeyboardInterrupt:
    print("interrupted", flush=True)
GO.set()
pool.shutdown(wait=True)  # a condition left held: the workers' set_result waits for ever
print("exited", bool(fired), flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_a_ctrl_c_inside_the_blocks_wait_leaves_no_lock_held(tmp_path: Any) -> None:
    """Python raises KeyboardInterrupt at any bytecode boundary: one landing in
    `concurrent.futures.wait` between two of the locks it takes left a
    future's condition held by the workflow thread, and the process hung
    for ever once the worker tried to set that future (seen under load in
    `test_fanout_ctrl_c.py`). The block now takes a first Ctrl-C as a mark
    and raises it between two waits."""
    import subprocess

    script = tmp_path / "wait_flow.py"
    script.write_text(_IN_WAIT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.split() == ["interrupted", "exited", "True"], done.stderr
