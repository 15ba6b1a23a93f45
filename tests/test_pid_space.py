"""A lease holder is judged by its pid only where that pid means it: the
same host name *and* pid space (boot and pid namespace). Two containers
sharing the host's name (`--network host`, Kubernetes `hostNetwork`) see
each other's pids as dead; before, the second took a live holder's run over
at once and both executed its steps."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import durable
from durable.testing import memory_store
from tests.conftest import ROOT

HOLD = """
import sys, durable
held = durable.open_store(sys.argv[1]).acquire("w", "r", 30)
print("held", flush=True)
sys.stdin.readline()
held.release()
"""

CONTEND = """
import sys, durable
try:
    durable.open_store(sys.argv[1]).acquire("w", "r", 30).release()
    print("taken over")
except durable.RunLockedError:
    print("locked")
"""


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("space", ["another boot:4026532000", None], ids=["other", "unknown"])
def test_a_holder_of_this_host_name_in_another_pid_space_is_not_judged_by_its_pid(
    space: str | None,
) -> None:
    """Its pid is dead here, so it was taken over at once; a holder that
    wrote no space (an older durable) counts as another host's too."""
    store = memory_store()
    now = time.time()
    owner = {"host": socket.gethostname(), "pid": _dead_pid(), "token": "t"}
    owner |= {"since": now, "expires": now + 60}
    if space is not None:
        owner["space"] = space
    store.put("w/r/lease/0000000007", json.dumps(owner).encode())
    with pytest.raises(durable.RunLockedError):
        store.acquire("w", "r", 30)


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a pid namespace of its own needs unshare, as root",
)
def test_a_process_in_another_pid_namespace_does_not_take_a_live_run_over(
    s3_url: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**os.environ, **s3_env, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, s3_url],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        contender = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", CONTEND, s3_url],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert contender.stdout.strip() == "locked", contender.stdout + contender.stderr
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
