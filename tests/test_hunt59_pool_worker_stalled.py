"""A process pool's worker stalled in a try (SIGSTOP here; a long item
alike) when its workflow process is killed (`kill -9`): the resume on this
host waited `triesgate.WAIT` (5 s) for that try to end, then went on beside
it, "that item runs again here": continued, the worker ended its try
after the resume's own try of the item had begun, the item's body executed
twice at once (hunt58 left it). Now the resume kills that worker (SIGKILL,
as the holder's kill would have had its pool died with it) and runs the
item once the worker is gone: never both at once.

The gate (a file of the run's in a folder of this user's under the
temporary folder) is also removed once the run is let go: before, each run
on a process pool left one behind, for good."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import durable
from durable._core.context import current_state
from durable._storage import triesgate

FLOW = textwrap.dedent(
    """
    import concurrent.futures as cf, json, logging, multiprocessing, os, time
    import durable
    from durable._storage import triesgate

    logging.basicConfig()  # durable's warnings to stderr
    triesgate.WAIT = 1.0  # the wait before the kill: short, so that the test is

    def note(what):
        fd = os.open(os.environ["LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (what + "\\n").encode())
        os.close(fd)

    @durable.step
    def item(i: int) -> int:
        role = os.environ["ROLE"]
        note(f"start {role} {os.getpid()}")
        if role == "hold":
            print("STARTED", flush=True)
            while not os.path.exists(os.environ["LOG"] + ".go"):  # until the test lets it go
                time.sleep(0.01)
        note(f"end {role} {os.getpid()}")
        return i * 10

    @durable.workflow(name="stalled")
    def stalled() -> list[int]:
        with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            return durable.loop_over(item, [1], executor=pool, checkpoint_items=True)

    if __name__ == "__main__":
        print(json.dumps(stalled.with_options(run_id="r")()))
    """
)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="the table of locks is Linux's")
def test_a_stalled_worker_of_a_killed_holder_is_killed_before_the_resume_tries(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "stalled.py").write_text(FLOW)
    log = tmp_path / "tries"
    env = {**child_env, "LOG": str(log)}
    holder = subprocess.Popen(
        [sys.executable, "stalled.py"], cwd=tmp_path, env={**env, "ROLE": "hold"},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    worker = 0
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "STARTED\n"  # from its worker, in the item's body
        worker = int(log.read_text().split()[2])
        os.kill(worker, signal.SIGSTOP)  # stalled past the resume's wait
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        resume = subprocess.run(
            [sys.executable, "stalled.py"], cwd=tmp_path, env={**env, "ROLE": "resume"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert resume.returncode == 0, resume.stderr
        assert resume.stdout.strip() == "[10]"
        # Before the fix the worker, continued and let go, ended its try now.
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGCONT)
        Path(str(log) + ".go").touch()
        deadline = time.monotonic() + 30  # a bound on a failure, not a synchronisation
        while not gone(worker) and "end hold" not in log.read_text():
            assert time.monotonic() < deadline, "the stalled worker still lives"
            time.sleep(0.01)
        lines = [" ".join(line.split()[:2]) for line in log.read_text().splitlines()]
        assert lines == ["start hold", "start resume", "end resume"], log.read_text()
        assert f"killed the pool worker(s) {worker} of its holder that died" in resume.stderr
        assert "beside it" not in resume.stderr
    finally:
        with contextlib.suppress(ProcessLookupError):  # the killed holder's worker
            os.killpg(holder.pid, signal.SIGKILL)
        assert holder.stdout is not None
        holder.stdout.close()


def double(i: int) -> int:
    return 2 * i


GATES: list[str | None] = []


@durable.workflow(name="pooled")
def pooled() -> list[int]:
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        out = durable.loop_over(double, [1, 2, 3], executor=pool)
    GATES.append(triesgate.gate_of(current_state().lease))  # type: ignore[union-attr]
    return out


@pytest.mark.skipif(not hasattr(fcntl, "flock"), reason="no shared flock: no gate")
def test_a_process_pool_run_leaves_no_gate_behind(local_store: durable.Store) -> None:
    GATES.clear()
    assert pooled.with_options(store=local_store, run_id="tidy")() == [2, 4, 6]
    [gate] = GATES
    assert gate is not None and not os.path.exists(gate)


@pytest.mark.skipif(not hasattr(fcntl, "flock"), reason="no shared flock: no gate")
def test_a_worker_locking_a_removed_gate_takes_the_one_at_its_name(tmp_path: Path) -> None:
    # A worker opened the gate, then the run was let go (the gate removed)
    # before its shared lock: it must hold the file a takeover would open.
    class Lease:
        path = str(tmp_path / "lease")

    gate = triesgate.handed(triesgate.gate_of(Lease()))
    assert gate is not None
    with triesgate.trying(gate):  # opens it, as a worker's first try does
        pass
    triesgate.done_with(Lease())
    assert not os.path.exists(gate)
    with triesgate.trying(gate):
        taker = os.open(gate, os.O_RDWR)
        try:  # a takeover's exclusive lock waits for this try
            with pytest.raises(BlockingIOError):
                fcntl.flock(taker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(taker)
    triesgate.done_with(Lease())  # not handed again: left, until a takeover
    assert os.path.exists(gate)
    os.unlink(gate)
