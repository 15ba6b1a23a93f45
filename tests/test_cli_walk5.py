"""The fifth new-user walk on the command line, run for real in child
processes: a CI job cancelled (SIGTERM) while `durable run --wait` waits for
another holder's lease."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from .clikit import ALL_STEPS, counts, held_and_waiting, read_until, write_flow

pytestmark = pytest.mark.slow


def test_a_signal_stops_run_wait_at_once(tmp_path: Path) -> None:
    """Before: SIGTERM (or Ctrl-C, which the waiting line says stops the
    wait) printed "finishing the step in flight, then stopping" and went on
    waiting for the holder, up to --wait seconds, then returned the run's
    value with exit 0: a cancelled CI job hung until it was killed."""
    write_flow(tmp_path)
    holder, waiter = held_and_waiting(tmp_path, "600")
    try:
        read_until(waiter.stderr, "stops waiting")
        waiter.send_signal(signal.SIGTERM)
        try:
            code = waiter.wait(timeout=30)  # the holder is still blocked: no wait for it
        except subprocess.TimeoutExpired:
            pytest.fail("SIGTERM did not stop `durable run --wait`")
        assert code == 143
        assert waiter.stderr is not None
        said = waiter.stderr.read().decode()
        assert "in flight" not in said  # nothing was
        assert "stopped waiting for run held (SIGTERM); nothing was executed here" in said
        assert "interrupted" not in said  # its holder goes on with it
        assert holder.stdin is not None
        holder.stdin.write(b"go\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    finally:
        for child in (holder, waiter):
            child.kill()
            child.wait()
    assert counts(tmp_path) == ALL_STEPS  # the waiter executed nothing
