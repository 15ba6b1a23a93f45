"""A lease found lost by the write of a failed try's history is the run's
final refusal (`stillheld.lease_lost`), as at any other write (review64's
C23): it was raised raw, so a body catching it went on to its next step,
and the run ended refused there, not where the lease was found lost. The
rebase rewrite (`replay._changed`) and a sleep's timer (`ops._sleep_plan`)
go through the same rule."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import forkcli
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a process of its own holds the run

SCRIPT = """
import os, sys
import durable

def log(what):
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(what + "\\n")

@durable.step(name="flaky", retries=1, retry_delay=0.0)
def flaky() -> int:
    log("flaky")
    print("HOLDING", flush=True)
    sys.stdin.readline()  # the run's folder is deleted meanwhile: its lease with it
    raise OSError("the service is down")

@durable.step(name="after")
def after() -> int:
    log("after")
    return 1

@durable.workflow(name="hist", run_id="h")
def hist() -> list:
    try:
        value = flaky()
    except Exception as e:  # a body that goes on after any error
        log(f"caught {type(e).__name__}")
        value = -1
    return [value, after()]

store = durable.open_store(os.environ["STORE"], lease_ttl=30)
try:
    hist.with_options(store=store).run()
except durable.LeaseLostError as e:
    print("LEASE_LOST", e.position, flush=True)
    sys.exit(4)
print("DONE", flush=True)
"""


def test_a_lease_lost_at_a_failed_tries_history_is_final(tmp_path: Path) -> None:
    script, log, root = tmp_path / "hist.py", tmp_path / "executions.log", tmp_path / "store"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), STORE=str(root), COUNT_LOG=str(log))
    holder = forkcli.popen([str(script)], tmp_path, env, stdin_pipe=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HOLDING"
        shutil.rmtree(root / "hist" / "h")  # by hand, under the live holder
        said, _ = holder.communicate("\n", timeout=120)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    # Refused where the lease was found lost (the history of position 0), not
    # at the next step the body went on to (was: LEASE_LOST 1).
    assert (holder.returncode, said.split()) == (4, ["LEASE_LOST", "0"])
    assert log.read_text().split("\n")[:2] == ["flaky", "caught LeaseLostError"]
    assert "after" not in log.read_text()
    assert not (root / "hist" / "h").exists()  # not a byte from the holder
