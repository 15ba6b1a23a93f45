"""A process pool's worker of a holder killed with `kill -9` just after the
worker's "is my workflow process alive" check passed (`_fanout.orphan`):
the check and the body's start are two moments, and the worker started
the try after a resume on this host had taken the run over, beside the
resume's own try of the same item (hunt57 left it: "the killed process's
pool made 1 tries once the resume began", seen 6 times under load). The
worker here is held between its check and its body until the resume holds
the run's lease. Now the resume waits for that try to end before it
starts its own (`_storage.triesgate`): the item runs twice in all, the
killed holder's try (in flight when it died, as documented) and then the
resume's, never both at once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FLOW = textwrap.dedent(
    """
    import concurrent.futures as cf, json, multiprocessing, os, sys, time
    import logging
    import durable
    from durable._fanout import executors

    logging.basicConfig()  # durable's warnings to stderr

    def note(what):
        fd = os.open(os.environ["LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, (what + "\\n").encode())
        os.close(fd)

    if os.environ["ROLE"] == "hold":
        lapsed = executors.lapsed

        def paused(until, here):
            # In the worker, right after its owner check passed: the test
            # kills the holder now, and lets the worker go on once the
            # resume holds the lease.
            note("checked")
            print("CHECKED", flush=True)
            with open(os.environ["LOG"] + ".go") as go:
                go.read()
            return lapsed(until, here)

        executors.lapsed = paused
    else:
        from durable._storage import triesgate

        triesgate.WAIT = 60  # the wait's bound, not what is proved: never reached on a loaded machine

    @durable.step
    def item(i: int) -> int:
        role = os.environ["ROLE"]
        note(f"start {role} {os.getpid()}")
        if role == "resume":
            # Until the killed holder's worker has started (bounded): before
            # the fix, it did so after this try had.
            deadline = time.monotonic() + 10
            while "start hold" not in open(os.environ["LOG"]).read() and time.monotonic() < deadline:
                time.sleep(0.005)
        note(f"end {role}")
        return i * 10

    @durable.workflow(name="gated")
    def gated() -> list[int]:
        with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            return durable.loop_over(item, [1], executor=pool)

    if __name__ == "__main__":
        print(json.dumps(gated.with_options(run_id="r")()))
    """
)


def test_a_killed_holders_worker_past_its_check_runs_before_the_resume(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    (tmp_path / "gated.py").write_text(FLOW)
    log = tmp_path / "tries"
    os.mkfifo(str(log) + ".go")
    env = {**child_env, "LOG": str(log)}
    holder = subprocess.Popen(
        [sys.executable, "gated.py"], cwd=tmp_path, env={**env, "ROLE": "hold"},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    resume = None
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "CHECKED\n"  # from its worker, past its check
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        resume = subprocess.Popen(
            [sys.executable, "gated.py"], cwd=tmp_path, env={**env, "ROLE": "resume"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        said: list[str] = []
        threading.Thread(target=lambda: said.extend(resume.stderr or ()), daemon=True).start()
        # Let the worker go once the resume waits for it, or (before the fix) once its own try began.
        deadline = time.monotonic() + 30  # a bound on a failure, not a synchronisation
        while not any("waiting for it" in line for line in said) and "start resume" not in log.read_text():
            assert time.monotonic() < deadline and resume.poll() is None, (log.read_text(), said)
            time.sleep(0.005)
        with open(str(log) + ".go", "w") as go:  # the killed holder's worker goes on
            go.write("go")
        assert resume.stdout is not None
        out = resume.stdout.read()
        assert resume.wait(timeout=60) == 0, (out, said)
        assert out.strip() == "[10]"
        lines = [" ".join(line.split()[:2]) for line in log.read_text().splitlines()]
        # The killed holder's try (in flight), then the resume's: once each, one after the other.
        assert lines == ["checked", "start hold", "end hold", "start resume", "end resume"], log.read_text()
    finally:
        if resume is not None and resume.poll() is None:
            resume.kill()
        with contextlib.suppress(ProcessLookupError):  # the killed holder's worker
            os.killpg(holder.pid, signal.SIGKILL)
        assert holder.stdout is not None
        holder.stdout.close()

