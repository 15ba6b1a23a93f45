"""A holder alive on this host but stopped (SIGSTOP, Ctrl-Z, a debugger)
whose lease on an object store expired is taken over (its `ObjectLease`,
over a folder here: S3's is the same code); the taker found the
manifest `running` and counted a death (`killed.count_killed`) though
nobody died: with DURABLE_MAX_RECOVERY_ATTEMPTS such takeovers failed a
healthy run with RunKilledError. Only a holder known dead is a death: its
pid gone on this host, or its lease expired on another host
(docs/reliability.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._manage.runs import read_manifest
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

FLOW = """
import os, sys, durable
from tests.keystore import Folder

@durable.step
def work():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    if os.environ.get("HOLD"):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # stopped here, then let go on
    return 1

@durable.workflow(name="paused", run_id="r1")
def paused():
    return work()

def store():
    return durable.open_store(Folder(os.environ["FOLDER"]), lease_ttl=1.0)

def go(run_id="r1"):
    return paused.with_options(store=store(), wait=60, run_id=run_id)()
"""


def test_a_stopped_holder_taken_over_is_no_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "paused52.py").write_text(FLOW)
    count = tmp_path / "count"
    monkeypatch.setenv("COUNT_FILE", str(count))
    monkeypatch.setenv("FOLDER", str(tmp_path / "store"))
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "1")  # one death counted fails it
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", HOLD="1")
    holder, dead = (_hold(env, run) for run in ("r1", "r2"))
    assert holder.stdout is not None and holder.stdin is not None and dead.stdout is not None
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert holder.stdout.readline() == dead.stdout.readline() == "HOLDING\n"
        dead.kill()  # and a holder known dead: its pid gone on this host
        dead.wait()
        os.kill(holder.pid, signal.SIGSTOP)  # alive, its lease unrenewed
        import paused52  # type: ignore[import-not-found]

        assert paused52.go() == 1  # taken over once expired: RunKilledError before
        holder.stdin.write("\n")
        holder.stdin.flush()
        os.kill(holder.pid, signal.SIGCONT)
        _, said = holder.communicate(timeout=60)
    finally:
        sys.modules.pop("paused52", None)
        dead.kill()
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait()
    assert "LeaseLostError" in said, said  # the holder, let go on, wrote nothing
    manifest = read_manifest(paused52.store(), "paused", "r1")
    assert (manifest.status, manifest.extra.get("killed")) == ("completed", None)
    with pytest.raises(durable.RunKilledError, match="killed 1 time in a row at position 0"):
        paused52.go("r2")  # counted: one death, the limit
    lines = count.read_text().split()
    assert sorted(lines) == sorted([str(holder.pid), str(dead.pid), str(os.getpid())]), lines


def _hold(env: dict[str, str], run_id: str) -> subprocess.Popen[str]:
    """A holder of `run_id` inside its step, which waits for a line."""
    code = f"import paused52; paused52.go({run_id!r})"
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
