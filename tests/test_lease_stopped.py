"""A holder stopped on this host (Ctrl-Z in its terminal, SIGSTOP) keeps a
local run's lease, a lock that lasts as long as its process: the next call
got `RunLockedError` saying the lease "expires" at a time that passes and
changes nothing, the run held for good with nothing to say why. It now says
that the holder is stopped and how to let it go on. Once continued, it
finishes the run, each step once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

HOLDER = """
import os, sys
import durable

@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == 1:
        print("HOLDING", flush=True)
        sys.stdin.readline()
    return i * 10

@durable.workflow(name="stopped", run_id="r")
def flow() -> list:
    return [work(i) for i in range(3)]

print("DONE", flow.with_options(store=sys.argv[1])(), flush=True)
"""


@durable.step(name="work")
def work(i: int) -> int:
    raise AssertionError("the run is another process's: nothing runs here")


@durable.workflow(name="stopped", run_id="r")
def flow() -> list[int]:
    return [work(i) for i in range(3)]


@pytest.mark.slow
def test_a_stopped_holder_of_a_local_run_is_named_as_stopped(tmp_path: Path) -> None:
    store, log = str(tmp_path / "store"), tmp_path / "executions.log"
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), PYTHONUNBUFFERED="1")
    holder = subprocess.Popen(
        [sys.executable, str(script), store],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "HOLDING"
        os.kill(holder.pid, signal.SIGSTOP)
        os.waitpid(holder.pid, os.WUNTRACED)  # returns once it is stopped
        with pytest.raises(durable.RunLockedError) as locked:
            flow.with_options(store=store)()
        said = str(locked.value)
        assert f"pid {holder.pid}" in said and "That process is stopped" in said, said
        assert f"kill -CONT {holder.pid}" in said
        os.kill(holder.pid, signal.SIGCONT)
        with pytest.raises(durable.RunLockedError) as running:  # going on: not stopped
            flow.with_options(store=store)()
        assert "stopped" not in str(running.value)
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, _ = holder.communicate(timeout=60)
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait()
    assert out.strip() == "DONE [0, 10, 20]"
    assert log.read_text().split() == ["0", "1", "2"]
