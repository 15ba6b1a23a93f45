"""A plain Ctrl-C (SIGINT without `stop_on_signals`) while a threaded
`loop_over(checkpoint_items=True)` has items running: those items finish
anyway (a thread cannot be stopped, and the interpreter waits for it), so
they are kept before the KeyboardInterrupt goes on; the resume runs only the
items never started. Real child processes, a real SIGINT, executions of each
item counted across the interrupt and the resume."""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import durable

from .clikit import read_until

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import concurrent.futures as cf, os, sys, threading
import durable

STORE, LOG, CHECKPOINT = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
GO = threading.Event()

def feed():
    sys.stdin.readline()
    GO.set()

@durable.step
def work(i):
    os.write(2, f"started {i}\\n".encode())
    GO.wait()
    with open(LOG, "a") as f:
        f.write(f"{i}\\n")
    return i * 10

@durable.workflow(store=STORE, run_id="r1")
def fan(n):
    with cf.ThreadPoolExecutor(2) as pool:
        return durable.loop_over(work, range(n), executor=pool, checkpoint_items=CHECKPOINT)

if __name__ == "__main__":  # Python's own SIGINT handler: a plain Ctrl-C
    threading.Thread(target=feed, daemon=True).start()
    print(fan(4))
"""


def _start(tmp: Path, checkpoint: bool) -> subprocess.Popen[bytes]:
    (tmp / "fan.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [str(tmp / "store"), str(tmp / "log.txt"), "1" if checkpoint else "0"]
    return subprocess.Popen(
        [sys.executable, str(tmp / "fan.py"), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp,
    )


def _interrupt_with_two_running(child: subprocess.Popen[bytes]) -> str:
    """SIGINT once items 0 and 1 run; they finish only once it stopped the block."""
    seen = read_until(child.stderr, "started")
    while seen.count("started") < 2:
        seen += read_until(child.stderr, "started")
    os.kill(child.pid, signal.SIGINT)
    # Said once no other item can start (without it, before the fix: the
    # exit waited for the threads, which waited for "go": timed out).
    seen += read_until(child.stderr, "no other item starts", timeout=20)
    child.stdin.write(b"go\n")  # type: ignore[union-attr]
    child.stdin.flush()  # type: ignore[union-attr]
    _, err = child.communicate(timeout=60)
    return seen + err.decode()


def _executions(tmp: Path) -> Counter[int]:
    return Counter(int(line) for line in (tmp / "log.txt").read_text().split())


def _resume(tmp: Path, checkpoint: bool) -> str:
    child = _start(tmp, checkpoint)
    out, err = child.communicate(b"go\n", timeout=60)
    assert child.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.slow
def test_items_running_at_a_plain_ctrl_c_are_kept_and_never_run_again(tmp_path: Path) -> None:
    child = _start(tmp_path, checkpoint=True)
    try:
        err = _interrupt_with_two_running(child)
    finally:
        child.kill()
        child.wait()
    assert "KeyboardInterrupt" in err
    assert "the 2 items running are kept once they finish (press Ctrl-C again" in err
    assert _executions(tmp_path) == {0: 1, 1: 1}  # 2 and 3 never started
    assert _resume(tmp_path, checkpoint=True).strip() == "[0, 10, 20, 30]"
    assert _executions(tmp_path) == {0: 1, 1: 1, 2: 1, 3: 1}


@pytest.mark.slow
def test_without_checkpoints_the_interrupt_does_not_wait(tmp_path: Path) -> None:
    """Nothing of the block is kept: the resume runs it whole, as documented."""
    child = _start(tmp_path, checkpoint=False)
    try:
        err = _interrupt_with_two_running(child)
    finally:
        child.kill()
        child.wait()
    assert "the 2 items running finish unkept (no checkpoint_items" in err
    assert _resume(tmp_path, checkpoint=False).strip() == "[0, 10, 20, 30]"
    assert _executions(tmp_path) == {0: 2, 1: 2, 2: 1, 3: 1}


def test_a_ctrl_c_while_an_item_waits_its_retry_delay_sends_no_other_try(
    local_store: durable.Store,
) -> None:
    """The Ctrl-C lands in the workflow thread (here: in the progress
    callback, once item 1 is kept) while item 0 waits out a 60 s retry
    delay: the block does not wait for it, and its next try is never made."""
    tries: list[int] = []
    retrying = threading.Event()  # item 0's next try is scheduled

    @durable.step(retries=2, retry_delay=60)
    def work(i: int) -> int:
        tries.append(i)
        if i == 0:
            raise ConnectionError("flaky")
        retrying.wait(60)
        return i

    def interrupt(progress: durable.Progress) -> None:
        raise KeyboardInterrupt

    def seen(event: object) -> None:
        if isinstance(event, durable.events.StepRetried):
            retrying.set()

    @durable.workflow(store=local_store, run_id="r")
    def fan() -> list[int]:
        with cf.ThreadPoolExecutor(2) as pool:
            return durable.loop_over(
                work, [0, 1], executor=pool, checkpoint_items=True, progress=interrupt
            )

    started = time.monotonic()
    with durable.on_event(seen), pytest.raises(KeyboardInterrupt):
        fan()
    assert time.monotonic() - started < 30  # not the 60 s delay
    assert sorted(tries) == [0, 1]  # item 0's second try never made


def test_the_gate_holds_only_the_tries_running() -> None:
    """A first version kept a future per finished try: 163 MB for a block
    of 100,000 items on a thread pool, until the block ended."""
    from durable._fanout.gate import Gate
    from durable._fanout.tries import ItemKey

    gate = Gate()
    with cf.ThreadPoolExecutor(4) as pool:
        scopes = [((0,), 0, ItemKey(None, i)) for i in range(1000)]  # type: ignore[arg-type]
        futures = [gate.submit(pool, s, lambda scope: scope[2].index) for s in scopes]
        assert [gate.taken(f) for f in futures] == list(range(1000))
    assert gate.held == {}


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_a_ctrl_c_while_an_outcome_is_taken_starts_no_other_item(
    local_store: durable.Store,
) -> None:
    """A first Ctrl-C is taken between two waits (`_fanout/interrupt.py`):
    one landing as the block keeps an item (here: in its progress callback,
    a real SIGINT) must still start no other item, though the block goes on
    to fill its window in the same pass."""
    ran: list[int] = []

    @durable.step
    def work(i: int) -> int:
        ran.append(i)
        return i

    def interrupt(progress: durable.Progress) -> None:
        if progress.done == 1:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    @durable.workflow(store=local_store, run_id="r")
    def fan() -> list[int]:
        with cf.ThreadPoolExecutor(1) as pool:
            return durable.loop_over(
                work, [0, 1, 2], executor=pool, checkpoint_items=True, progress=interrupt, max_concurrency=1
            )

    with pytest.raises(KeyboardInterrupt):
        fan()
    assert ran == [0]
