"""Real processes racing for one run, on local disk and on S3 (moto over HTTP).

Every step body appends a line to a shared file, so the file counts
executions across all processes. Children report through stdout and exit
codes and wait on stdin, never on a timer."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

import durable
from tests import forkcli
from tests.conftest import ROOT

CHILD = """
import json, os, socket, sys, time
if os.environ.get("FAKE_HOST"):
    # This process plays a second machine: its lease names another host,
    # so nobody can see that its pid died and the lease must expire.
    socket.gethostname = lambda: os.environ["FAKE_HOST"]
import durable

@durable.step(name="work")
def work(i: int) -> int:
    # Read at call time: a module-level setting would be part of the step's
    # fingerprint, and the holder and the resumer differ in HOLD_AT.
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {time.time()}\\n")
    if i == int(os.environ.get("HOLD_AT", "-1")):
        print("HOLDING", flush=True)
        sys.stdin.readline()  # until the parent says go on (or kills us)
    return i * i

@durable.workflow(name="race", run_id="shared")
def race() -> list:
    return [work(i) for i in range(6)]

store = durable.open_store(os.environ["RACE_STORE"], lease_ttl=float(os.environ["TTL"]))
wait = float(os.environ.get("WAIT", "0")) or None
print("READY", flush=True)
sys.stdin.readline()
try:
    run = race.with_options(store=store, wait=wait).run()
except durable.RunLockedError as e:
    print("LOCKED", json.dumps({"holder": e.holder, "expires": e.expires}), flush=True)
    sys.exit(3)
print("DONE", run.steps_executed, run.steps_replayed, flush=True)
"""


LIVE: list[Child] = []


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    """Kill any child a failing test left waiting on its stdin."""
    yield
    while LIVE:
        child = LIVE.pop()
        if child.proc.poll() is None:
            child.proc.kill()
        child.finish()


class Child:
    def __init__(self, script: Path, env: dict[str, str], errors: Path) -> None:
        LIVE.append(self)
        self.errors = errors.open("w")
        # forked from an interpreter that imported durable once (`forkcli`)
        self.proc = forkcli.popen([str(script)], script.parent, env, stdin_pipe=True, stderr=self.errors)

    @property
    def stdin(self) -> IO[str]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    def line(self) -> str:
        assert self.proc.stdout is not None
        got = self.proc.stdout.readline().strip()
        assert got, f"child {self.proc.pid} said nothing; stderr:\n{self.stderr()}"
        return got

    def tell(self, text: str = "") -> None:
        self.stdin.write(text + "\n")
        self.stdin.flush()

    def finish(self) -> int:
        self.stdin.close()
        code = self.proc.wait(timeout=120)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.errors.close()
        if self in LIVE:
            LIVE.remove(self)
        return code

    def stderr(self) -> str:
        self.errors.flush()
        return Path(self.errors.name).read_text()


@pytest.fixture(params=["local", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Environment naming the store every child opens."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env["COUNT_LOG"] = str(tmp_path / "executions.log")
    if request.param == "local":
        env["RACE_STORE"] = str(tmp_path / "store")
    else:
        env["RACE_STORE"] = request.getfixturevalue("s3_url")
        env.update(request.getfixturevalue("s3_env"))
    return env


def spawn(tmp_path: Path, env: dict[str, str], n: int, tag: str, **extra: str) -> list[Child]:
    """n children of CHILD, each READY and waiting for GO on its stdin."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    children = [Child(script, dict(env, **extra), tmp_path / f"{tag}-{i}.stderr") for i in range(n)]
    for c in children:
        assert c.line() == "READY"
    return children


def executions(env: dict[str, str]) -> list[tuple[int, float]]:
    path = Path(env["COUNT_LOG"])
    lines = path.read_text().split("\n") if path.exists() else []
    return [(int(a), float(b)) for a, b in (ln.split() for ln in lines if ln)]


@pytest.mark.slow
def test_eight_processes_start_one_run_exactly_one_executes(
    tmp_path: Path, where: dict[str, str]
) -> None:
    children = spawn(tmp_path, where, 8, "racer", HOLD_AT="0", TTL="30")
    for c in children:  # all at once: each was already waiting on its stdin
        c.tell("GO")
    said = {c.proc.pid: c.line() for c in children}
    holders = [c for c in children if said[c.proc.pid] == "HOLDING"]
    assert len(holders) == 1, said
    holder = holders[0]
    me = socket.gethostname()
    for c in children:
        if c is holder:
            continue
        tag, _, payload = said[c.proc.pid].partition(" ")
        assert tag == "LOCKED"
        assert json.loads(payload)["holder"] == f"pid {holder.proc.pid} on {me}"
        assert c.finish() == 3
    holder.tell()
    assert holder.line() == "DONE 6 0"
    assert holder.finish() == 0
    assert Counter(i for i, _ in executions(where)) == {i: 1 for i in range(6)}


@pytest.mark.slow
def test_holder_killed_mid_run_is_taken_over_after_its_lease_expires(
    tmp_path: Path, where: dict[str, str]
) -> None:
    on_s3 = where["RACE_STORE"].startswith("s3://")
    # On S3 the holder plays another machine, so its lease has to expire;
    # on local disk the kernel drops its flock the moment it dies.
    extra = {"FAKE_HOST": "machine-a"} if on_s3 else {}
    (holder,) = spawn(tmp_path, where, 1, "holder", HOLD_AT="3", TTL="3", **extra)
    holder.tell("GO")
    assert holder.line() == "HOLDING"  # steps 0-2 recorded, step 3 running
    os.kill(holder.proc.pid, signal.SIGKILL)
    assert holder.finish() == -signal.SIGKILL

    store = durable.open_store(where["RACE_STORE"])
    expires = 0.0
    if on_s3:
        with pytest.raises(durable.RunLockedError) as err:
            store.acquire("race", "shared", 3)
        assert err.value.holder == f"pid {holder.proc.pid} on machine-a"
        expires = err.value.expires
        assert expires > time.time()
    else:
        store.acquire("race", "shared", 3).release()  # free at once

    (resumer,) = spawn(tmp_path, where, 1, "resumer", TTL="3", WAIT="60")
    resumer.tell("GO")
    assert resumer.line() == "DONE 3 3"
    assert resumer.finish() == 0
    runs = executions(where)
    # Step 3 ran twice: it was executing when the holder died, unrecorded.
    assert Counter(i for i, _ in runs) == {0: 1, 1: 1, 2: 1, 3: 2, 4: 1, 5: 1}
    retaken = [t for i, t in runs if i == 3][1]
    assert retaken >= expires  # not before the dead holder's lease ran out


def test_locked_error_message_names_holder_and_expiry(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s")
    lease: Any = store.acquire("w", "r", 30)
    with pytest.raises(durable.RunLockedError) as err:
        durable.open_store(tmp_path / "s").acquire("w", "r", 30)
    text = str(err.value)
    assert f"pid {os.getpid()}" in text and "lease expires" in text and "wait=" in text
    lease.release()
