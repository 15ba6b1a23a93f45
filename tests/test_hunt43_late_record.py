"""A holder on S3 stopped (SIGSTOP) after its lease check passed and before
its record's create-only PUT: its renewal starved, its lease expired, and
either another process took the run over or `durable rm` removed the run and
another process started it afresh. Continued, the first holder's PUT of its
step's record landed at a name the new holder had not written yet (nothing
on S3 can refuse it), and the new holder's own create-only write of that
step then lost to it: the run went on with, and returned, the value of the
process that had lost the run (or of the run the user removed), not the
value of the step the new holder had just executed.

The holder writes the only records of its run: a record at a name it never
wrote, which differs from its own, is a late write of a holder that lost
the run, and its own record now replaces it (in a segment, as a replaced
record is), so that the run's result is the holder's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

import durable
from tests import forkcli
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCRIPT = """
import json, os, sys
import durable

@durable.step(name="work")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == 1 and os.environ.get("ROLE") == "taker":
        print("IN_STEP_1", flush=True)
        sys.stdin.readline()  # the parent lets us go on once the late write landed
    return f"{i} by {os.getpid()}"

@durable.workflow(name="late43", run_id="shared")
def late43() -> list:
    return [work(i) for i in range(3)]

def main() -> None:
    store = durable.open_store(os.environ["STORE"], lease_ttl=2.0)
    if os.environ.get("ROLE") == "first":
        class Paused(type(store)):
            def create(self, key, data):
                # After the lease check of step 1's record, before its PUT.
                if key.endswith("steps/00000001"):
                    print("PAUSED", flush=True)
                    sys.stdin.readline()  # the parent stops us here, then lets us go on
                return super().create(key, data)
        store.__class__ = Paused
    try:
        run = late43.with_options(store=store, wait=120).run()
    except durable.LeaseLostError as e:
        print("LEASE_LOST", e.position, flush=True)
        sys.exit(4)
    print("DONE", json.dumps(run.value), flush=True)

main()
"""


def _spawn(script: Path, env: dict[str, str], role: str) -> subprocess.Popen[str] | forkcli.Forked:
    return forkcli.popen([str(script)], script.parent, dict(env, ROLE=role), stdin_pipe=True)


def _go_on(proc: subprocess.Popen[str] | forkcli.Forked) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()


def _remove_once_expired(url: str) -> None:
    """`durable rm` of the run, refused while its lease is live: asked again
    until the stopped holder's lease has expired (then it waits the lease's
    watch out itself and removes the run)."""
    wf = durable.workflow(name="late43")(lambda: None).with_options(store=durable.open_store(url))
    deadline = time.monotonic() + 60
    while True:
        try:
            return wf.delete("shared")
        except durable.RunLockedError:
            assert time.monotonic() < deadline, "the stopped holder's lease never expired"
            time.sleep(0.25)  # a lease's expiry is a time: polled, a few times


@pytest.mark.parametrize("then", ["taken_over", "removed"])
def test_a_late_record_of_a_holder_that_lost_the_run_is_not_the_new_holders_result(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], then: str
) -> None:
    script = tmp_path / "late.py"
    script.write_text(SCRIPT)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(STORE=s3_url, COUNT_LOG=str(log))
    first = _spawn(script, env, "first")
    taker: subprocess.Popen[str] | forkcli.Forked | None = None
    try:
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "PAUSED"  # step 1 ran, its record not sent
        os.kill(first.pid, signal.SIGSTOP)  # its renewal starves: the lease expires
        if then == "removed":
            _remove_once_expired(s3_url)
        taker = _spawn(script, env, "taker")
        assert taker.stdout is not None
        assert taker.stdout.readline().strip() == "IN_STEP_1"
        _go_on(first)
        os.kill(first.pid, signal.SIGCONT)  # its PUT of step 1's record lands now
        said, _ = first.communicate(timeout=120)
        assert first.returncode == 4 and said.startswith("LEASE_LOST"), said
        _go_on(taker)
        out, _ = taker.communicate(timeout=120)
        assert taker.returncode == 0, out
    finally:
        for proc in (first, taker):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
    tag, _, value = out.strip().partition(" ")
    first_value = f"0 by {first.pid if then == 'taken_over' else taker.pid}"
    assert (tag, json.loads(value)) == (
        "DONE", [first_value, f"1 by {taker.pid}", f"2 by {taker.pid}"]
    )  # fmt: skip
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    # Step 1 ran in both (the first stopped after it); the rest once, after a removal
    # step 0 again too (the removed run's record went with it).
    again = {(0, False): 1} if then == "removed" else {}
    assert executed == {(0, True): 1, (1, True): 1, (1, False): 1, (2, False): 1, **again}
    # What the run records, read back: the taker's outputs, and the run complete.
    wf = durable.workflow(name="late43")(lambda: None).with_options(store=durable.open_store(s3_url))
    assert [r.status for r in wf.runs() if r.run_id == "shared"] == ["completed"]
    steps = [info.value for info in wf.history("shared") if info.kind == "step"]
    assert steps == [first_value, f"1 by {taker.pid}", f"2 by {taker.pid}"]
