"""A process whose /proc is not of its pid namespace (started by `unshare
--pid --fork` without `--mount-proc`, a sandbox sharing the host's /proc):
`/proc/<pid>/stat` of its own pid, and of every peer's of its namespace,
is another process's, the host's with that number. The holder's start
time (`pidspace.own_start`) was that process's, and a peer judging a live
holder compared the holder's real start with it: "another process runs
with that pid", so the live holder was dead and its run taken over (a
step executed twice); the host's process a zombie, the same. Where /proc
is not this namespace's, no start time is read: a live pid is the
holder's (a wait, never a second execution)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a process in a pid namespace of its own

CHECK = """
import os
from durable._storage.pidspace import holder_running, host_name, own_start, pid_space

with open("/proc/self/stat", "rb") as f:  # /proc/self: this very process, whatever the numbers
    mine = f.read().rpartition(b")")[2].split()[19].decode()
print("pid", os.getpid())
print("proc", os.readlink("/proc/self"))
print("own", own_start() in (None, mine))
# This process holding a lease, as a peer of its namespace sees it.
print("alive", holder_running({"host": host_name(), "space": pid_space(), "pid": os.getpid(), "born": mine}))
"""
UNSHARE = ["unshare", "--user", "--map-root-user", "--pid", "--fork"]


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*UNSHARE, "true"], capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="no user and pid namespaces here")
def test_a_holder_whose_proc_is_another_namespaces_reads_no_start_time_and_stays_alive() -> None:
    done = subprocess.run(
        [*UNSHARE, sys.executable, "-c", CHECK],
        env={"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines.get("pid") == "1", done.stdout + done.stderr  # its /proc the host's: /proc/self is no 1
    assert lines["proc"] != "1", done.stdout
    # Was: own False (the start of the host's pid 1), alive False (a live holder taken for dead).
    assert (lines["own"], lines["alive"]) == ("True", "True"), done.stdout + done.stderr
