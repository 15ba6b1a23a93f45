"""Two machines whose clocks disagree share an S3 store (moto's server over
HTTP). A lease's expiry is written with the holder's clock; a contender
whose clock runs ahead must not read a live holder's lease as expired and
run the same steps a second time. Nor must one on the holder's own host
after that host's clock jumped forward (an NTP step, a VM resumed): the
holder's pid is alive, so the expiry alone does not free its lease."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests import forkcli
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # moto and three processes

SCRIPT = """
import os, socket, sys, time

# This "machine": its own host name, and a clock SKEW seconds ahead.
socket.gethostname = lambda: os.environ["HOST"]
_real = time.time
time.time = lambda: _real() + float(os.environ.get("SKEW", "0"))

import durable

@durable.step
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{os.environ['HOST']}:{i}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()
    return i + 100

@durable.workflow
def nightly() -> list:
    return [work(i) for i in range(3)]

store = durable.open_store(lease_ttl=3)
try:
    run = nightly.with_options(store=store, run_id="skewed").run()
except durable.RunLockedError as e:
    print("LOCKED", e, flush=True)
else:
    print("DONE", run.steps_replayed, run.steps_executed, flush=True)
"""


def _holder(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], **extra: str
) -> tuple[subprocess.Popen[str] | forkcli.Forked, dict[str, str], Path, Path]:
    """Process A on machine-a (`extra`: more of its environment), running
    the nightly script up to its hold:
    (A, the environment for other processes, the script, the count log)."""
    script, log = tmp_path / "nightly.py", tmp_path / "executions.log"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DURABLE_"))}
    env.update(s3_env, PYTHONPATH=str(ROOT), DURABLE_STORE=s3_url, COUNT_LOG=str(log))
    a = forkcli.popen([str(script)], tmp_path, dict(env, HOST="machine-a", HOLD_AT="1", **extra), stdin_pipe=True)
    assert a.stdout is not None and a.stdin is not None
    return a, env, script, log


def _released(a: subprocess.Popen[str] | forkcli.Forked) -> str:
    """Let the holder go on from its hold; what it printed then (it exits 0)."""
    assert a.stdout is not None and a.stdin is not None
    a.stdin.write("\n")
    a.stdin.close()
    finished = a.stdout.read()
    assert a.wait() == 0
    return finished


@pytest.mark.parametrize("b_host", ["machine-b", "machine-a"])
def test_a_contender_with_a_clock_ahead_does_not_take_a_live_lease(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], b_host: str
) -> None:
    a, env, script, log = _holder(tmp_path, s3_url, s3_env)
    assert a.stdout is not None and a.stdin is not None
    assert a.stdout.readline().strip() == "HOLDING"  # A holds the run, alive, renewing
    # B's clock is 2 minutes ahead: A's lease (3 s) looks long expired to it.
    # On A's own host (b_host "machine-a"), as after the host's clock jumped.
    b = forkcli.call([str(script)], tmp_path, dict(env, HOST=b_host, SKEW="120"))
    finished = _released(a)
    assert b.stdout.startswith("LOCKED"), (b.stdout, b.stderr)
    assert "machine-a" in b.stdout
    assert finished.split() == ["DONE", "0", "3"]
    assert log.read_text().split() == ["machine-a:0", "machine-a:1", "machine-a:2"]


# `durable rm` on A's host after its clock jumped 2 minutes forward.
RM = """
import os, socket, sys, time
socket.gethostname = lambda: os.environ["HOST"]
_real = time.time
time.time = lambda: _real() + float(os.environ.get("SKEW", "0"))
from durable._cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_rm_on_the_holders_host_after_a_clock_jump_leaves_the_live_run_alone(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    a, env, _, _ = _holder(tmp_path, s3_url, s3_env)
    assert a.stdout is not None and a.stdin is not None
    assert a.stdout.readline().strip() == "HOLDING"
    rm = forkcli.call(["-c", RM, "rm", "skewed"], tmp_path, dict(env, HOST="machine-a", SKEW="120"))
    finished = _released(a)
    assert rm.returncode == 2 and "is being executed by" in rm.stderr, (rm.stdout, rm.stderr)
    assert finished.split() == ["DONE", "0", "3"]  # the run was not removed under it
