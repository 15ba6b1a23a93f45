"""A process pool's worker outlives a workflow process killed with
`kill -9`: idle on the pool's queue, it took the items already queued
there and entered their bodies with no run holding them, while a resume in
another process could run the same items (the faults9 campaign, `kill -9
over item retries`, saw up to 4 such tries). A worker starts no try once
the process that submitted it is gone, and exits."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import concurrent.futures as cf, multiprocessing, os, signal, sys
    import durable

    LOG, STORE = sys.argv[1], sys.argv[2]
    QUEUED = LOG + ".queued"

    class Pool(cf.ProcessPoolExecutor):
        def submit(self, *args, **kwargs):
            future = super().submit(*args, **kwargs)
            if len(self._pending_work_items) == 2:  # until both (its window) are on the queue
                while not self._work_ids.empty():
                    pass
                open(QUEUED, "w").close()
            return future

    def reaped(pid: int) -> bool:
        # Not a zombie leader: its other threads may still be exiting, and
        # its children are not yet anyone else's.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    def body(i: int) -> int:
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {i}\\n")
        if i == 0:  # the workflow dies while items 1 and 2 wait in the pool's queue
            while not os.path.exists(QUEUED):
                pass
            workflow = int(os.environ["WORKFLOW_PID"])
            os.kill(workflow, signal.SIGKILL)
            while not reaped(workflow):  # the test reaps it
                pass
        return i

    @durable.workflow(name="orphans")
    def orphans() -> list[int]:
        ctx = multiprocessing.get_context(sys.argv[3])
        with Pool(1, mp_context=ctx) as pool:
            return durable.loop_over(body, [0, 1, 2], executor=pool)

    if __name__ == "__main__":  # not in a spawned worker, which imports this too
        os.environ["WORKFLOW_PID"] = str(os.getpid())
        orphans.with_options(store=STORE, run_id="r")()
    """
)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize("start", ["fork", "spawn", "forkserver"])
def test_a_worker_of_a_killed_workflow_starts_no_queued_item(
    tmp_path: Path, child_env: dict[str, str], start: str
) -> None:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    for trial in range(5):
        log = tmp_path / f"tries{trial}"
        args = [sys.executable, str(script), str(log), str(tmp_path / f"store{trial}"), start]
        child = subprocess.run(args, env=child_env, cwd=tmp_path, timeout=20, check=False)
        assert child.returncode == -9
        worker = int(log.read_text().split()[0])
        try:
            deadline = time.monotonic() + 10  # a bound on a failure, not a synchronisation
            while not gone(worker) and len(log.read_text().splitlines()) == 1:
                if time.monotonic() > deadline:
                    break  # the queue's feeder thread died before it wrote: again
            else:
                assert log.read_text().split()[1::2] == ["0"], log.read_text()
                return
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)
    pytest.fail("the orphaned worker neither exited nor went on, 5 times")


# The start of a script whose workflow a pool's worker kills: its log and
# store, and whether a pid is reaped (the test reaps the workflow).
_HEAD = """
import concurrent.futures as cf, multiprocessing, os, signal, sys
import durable

LOG, STORE = sys.argv[1], sys.argv[2]

def reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
"""



def _tail(items: str) -> str:
    """The end of such a script: its workflow runs `body` over `items` on a
    fork pool of one worker, with its own pid for the worker to kill."""
    return f"""
@durable.workflow(name="orphans")
def orphans() -> list[int]:
    ctx = multiprocessing.get_context("fork")
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        return durable.loop_over(body, {items}, executor=pool)

if __name__ == "__main__":
    os.environ["WORKFLOW_PID"] = str(os.getpid())
    orphans.with_options(store=STORE, run_id="r")()
"""


DELAYED = _HEAD + textwrap.dedent(
    """
    from durable._storage import clock

    class Dying(clock.Clock):
        def sleep(self, seconds: float) -> None:
            # The retry's delay: the workflow dies meanwhile.
            workflow = int(os.environ["WORKFLOW_PID"])
            with open(LOG + ".slept", "w") as f:
                f.write("workflow" if os.getpid() == workflow else "worker")
            os.kill(workflow, signal.SIGKILL)
            while not reaped(workflow):  # the test reaps it
                pass

    clock.clock = Dying()

    @durable.step(retries=1, retry_delay=60)
    def body(i: int) -> int:
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {i}\\n")
        if len(open(LOG).read().splitlines()) == 1:
            raise ValueError("the first try fails")
        return i

    """
) + _tail("[0]")


def test_a_worker_whose_workflow_dies_in_a_retrys_delay_makes_no_try(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """The worker waited out a retry's delay (`retry_delay`) before the try:
    it checked its workflow process before the wait only, and a kill -9
    meanwhile left it making the try with no run holding the item. The
    delay is now waited in the workflow process: it died there, and no try
    was ever sent to the worker."""
    script, log = tmp_path / "flow.py", tmp_path / "tries"
    script.write_text(DELAYED)
    args = [sys.executable, str(script), str(log), str(tmp_path / "store")]
    child = subprocess.run(args, env=child_env, cwd=tmp_path, timeout=20, check=False)
    assert child.returncode == -9
    worker = int(log.read_text().split()[0])
    try:
        assert (tmp_path / "tries.slept").read_text() == "workflow"
        assert log.read_text().split()[1::2] == ["0"], log.read_text()  # the first try only
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)


LOADING = _HEAD + textwrap.dedent(
    """
    class Item:
        def __init__(self, i: int) -> None:
            self.i = i

        def __setstate__(self, state: dict) -> None:
            # Unpickled in the worker, after its first look at the workflow
            # process: the workflow dies now.
            self.__dict__.update(state)
            workflow = int(os.environ["WORKFLOW_PID"])
            with open(LOG + ".loading", "w") as f:
                f.write(str(os.getpid()))
            os.kill(workflow, signal.SIGKILL)
            while not reaped(workflow):  # the test reaps it
                pass

    def body(item: Item) -> int:
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {item.i}\\n")
        return item.i

    """
) + _tail("[Item(0)]")


def test_a_worker_whose_workflow_dies_while_it_loads_the_item_enters_no_body(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """The worker looked at its workflow process before unpickling the
    function and the item only: a kill -9 while it loaded them (milliseconds
    for a big item) left it entering the body with no run holding the item
    (the fault campaign's `kill -9 over item retries` saw one such late try).
    It looks again as the body starts, and exits."""
    script, log = tmp_path / "flow.py", tmp_path / "tries"
    script.write_text(LOADING)
    args = [sys.executable, str(script), str(log), str(tmp_path / "store")]
    child = subprocess.run(args, env=child_env, cwd=tmp_path, timeout=20, check=False)
    assert child.returncode == -9
    worker = int((tmp_path / "tries.loading").read_text())
    try:
        deadline = time.monotonic() + 10  # a bound on a failure, not a synchronisation
        while not gone(worker) and time.monotonic() < deadline:
            pass
        assert gone(worker)  # it exited rather than go on
        assert not log.exists(), log.read_text()  # and entered no body
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)
