"""A holder stopped (SIGSTOP, a suspended laptop) past its lease on an
object store, whose process-pool worker is inside an item's try: another
process on this host took the run over and ran that item at once, beside
the worker, which goes on while its holder is stopped (hunt57 accepted it):
the item's body executed twice at once. Now the taker treats the stopped
holder's workers as a dead holder's (`triesgate`, hunt59): it waits
`WAIT`, then kills the worker still in its try (logging it), and runs the
item once the worker is gone: never both at once. The holder, continued,
has lost its lease and returns nothing.

The store is an object store over a folder (`tests.keystore.Folder`: the
same `ObjectLease` as S3's)."""

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

from tests.test_hunt59_pool_worker_stalled import gone

FLOW = textwrap.dedent(
    """
    import concurrent.futures as cf, json, logging, multiprocessing, os, sys, time
    import durable
    from durable._storage import triesgate
    from tests.keystore import Folder

    logging.basicConfig()  # durable's warnings to stderr
    triesgate.WAIT = 1.0  # the wait before the kill: short, so that the test is

    def note(what):
        fd = os.open(os.environ["LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (what + "\\n").encode())
        os.close(fd)

    def item(i: int) -> int:
        role = os.environ["ROLE"]
        note(f"start {role} {os.getpid()}")
        if role == "hold":
            print("STARTED", flush=True)
            while not os.path.exists(os.environ["LOG"] + ".go"):  # until the test lets it go
                time.sleep(0.01)
        note(f"end {role} {os.getpid()}")
        return i * 10

    @durable.workflow(name="stopped", run_id="r")
    def stopped() -> list[int]:
        with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            return durable.loop_over(item, [1], executor=pool, checkpoint_items=True)

    if __name__ == "__main__":
        store = durable.open_store(Folder(os.environ["FOLDER"]), lease_ttl=1.0)
        try:
            print("VALUE", json.dumps(stopped.with_options(store=store, wait=60)()), flush=True)
        except durable.DurableError as e:
            print(type(e).__name__, e, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="the table of locks is Linux's")
def test_a_worker_of_a_stopped_holder_is_killed_before_the_taker_tries(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "stopped.py").write_text(FLOW)
    log = tmp_path / "tries"
    env = {**child_env, "LOG": str(log), "FOLDER": str(tmp_path / "objects")}
    holder = subprocess.Popen(
        [sys.executable, "stopped.py"], cwd=tmp_path, env={**env, "ROLE": "hold"},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "STARTED\n"  # from its worker, in the item's body
        worker = int(log.read_text().split()[2])
        os.kill(holder.pid, signal.SIGSTOP)  # its worker goes on
        taker = subprocess.run(
            [sys.executable, "stopped.py"], cwd=tmp_path, env={**env, "ROLE": "take"},
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert taker.stdout.strip() == "VALUE [10]", taker.stdout + taker.stderr
        # Before the fix the worker, let go, ended its try now: after the taker's began.
        Path(str(log) + ".go").touch()
        deadline = time.monotonic() + 30  # a bound on a failure, not a synchronisation
        while not gone(worker) and "end hold" not in log.read_text():
            assert time.monotonic() < deadline, "the stopped holder's worker still lives"
            time.sleep(0.01)
        lines = [" ".join(line.split()[:2]) for line in log.read_text().splitlines()]
        assert lines == ["start hold", "start take", "end take"], log.read_text()
        said = " ".join(taker.stderr.split())
        assert f"killed the pool worker(s) {worker} of its holder stopped past its lease (pid {holder.pid})" in said
        assert "beside it" not in said
        os.kill(holder.pid, signal.SIGCONT)
        out, _ = holder.communicate(timeout=60)
        assert out.startswith("LeaseLostError"), out  # nothing returned from a run taken over
        assert [" ".join(line.split()[:2]) for line in log.read_text().splitlines()] == lines
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGCONT)
            os.killpg(holder.pid, signal.SIGKILL)
        assert holder.stdout is not None
        holder.stdout.close()
