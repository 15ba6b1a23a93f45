"""A lease holder's pid, once it died, may be given by the kernel to another
process of this host (pids wrap at `pid_max`, 32768 on many systems): the
dead holder looked alive to `kill(pid, 0)`, so the next attempt took its
lease over only once expired and watched, as one of a live stopped holder
(`ObjectLease.from_live`), and counted no death (`killed.count_killed`): a
step killing its process ran again at every resume, forever, never
`RunKilledError`. The owner document now names its holder's start time too
(`pidspace.process_start`), and a pid found running another process is a
dead holder's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, signal, durable
from tests.keystore import Folder

@durable.step
def work():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    if os.environ.get("KILL"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return 1

@durable.workflow(name="reused")
def reused():
    return work()

def store():
    return durable.open_store(Folder(os.environ["FOLDER"]), lease_ttl=1.0)

def go(run_id):
    return reused.with_options(store=store(), wait=60, run_id=run_id)()
"""


def test_a_dead_holder_whose_pid_another_process_took_counts_as_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r1: the holder's pid taken by another process; r2: the holder a
    zombie (killed, its exit not collected yet by its parent: a supervisor
    that restarts the script, or a shell), which `kill(pid, 0)` finds too."""
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("a process's start time and state are read in /proc (Linux)")
    (tmp_path / "reused53.py").write_text(FLOW)
    count = tmp_path / "count"
    monkeypatch.setenv("COUNT_FILE", str(count))
    monkeypatch.setenv("FOLDER", str(tmp_path / "store"))
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "1")  # one death counted fails it
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", KILL="1")
    code = "import reused53, sys; reused53.go(sys.argv[1])"
    killed = [subprocess.Popen([sys.executable, "-c", code, run], env=env) for run in ("r1", "r2")]
    assert killed[0].wait() == -9
    os.waitid(os.P_PID, killed[1].pid, os.WEXITED | os.WNOWAIT)  # dead, left a zombie
    # The kernel gave r1's dead holder's pid to another process: our parent
    # stands for it (alive, and not us). Only the pid changes.
    leases = sorted((tmp_path / "store" / "reused" / "r1" / "lease").iterdir())
    doc = json.loads(leases[-1].read_bytes())
    assert doc["pid"] == killed[0].pid != os.getppid()
    leases[-1].write_text(json.dumps({**doc, "pid": os.getppid()}))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import reused53  # type: ignore[import-not-found]

        for run in ("r1", "r2"):
            # Before: the step ran again here, and no death was ever counted.
            with pytest.raises(durable.RunKilledError, match="killed 1 time in a row at posit"):
                reused53.go(run)
    finally:
        sys.modules.pop("reused53", None)
        assert killed[1].wait() == -9
    assert sorted(count.read_text().split()) == sorted(str(p.pid) for p in killed)
