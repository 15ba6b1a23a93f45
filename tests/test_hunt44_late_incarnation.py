"""A holder on S3 stopped (SIGSTOP) after its lease check and before its
record's PUT; its lease expired, `durable rm` removed the run, and another
process started it afresh under the same id, where that step failed. The
stopped holder, continued, sent its record: it landed at the name the new
run had not written (its step failed), and the new run's resume replayed
the removed run's output instead of running the step (a stale value).

Each run's records now live in the folder of its incarnation, a token its
manifest holds (`keys.INCARNATION`): the stopped process, which made its
token in its own run, writes into that one's folder, which no reader of
the new run looks in, and the new run's holder deletes what it finds there."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._storage.keys import INCARNATION
from tests.conftest import ROOT, record_base
from tests.test_hunt43_late_record import _go_on, _remove_once_expired, _spawn

pytestmark = pytest.mark.slow

SCRIPT = """
import json, os, sys
import durable

@durable.step(name="work")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\\n")
    if i == 1 and os.environ.get("ROLE") == "new" and not os.environ.get("RESUMED"):
        raise RuntimeError("step 1 fails in the new run")
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
    except durable.LeaseLostError:
        print("LEASE_LOST", flush=True)
        sys.exit(4)
    except RuntimeError as e:
        print("FAILED", e, flush=True)
        sys.stdin.readline()  # the parent lets us resume once the late write landed
        os.environ["RESUMED"] = "1"
        run = late43.with_options(store=store, wait=120).run()
    print("DONE", json.dumps(run.value), flush=True)

main()
"""


def test_a_removed_runs_late_record_is_not_replayed_by_the_run_started_afresh(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    script = tmp_path / "late.py"
    script.write_text(SCRIPT)
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **s3_env)
    env.update(STORE=s3_url, COUNT_LOG=str(log))
    first = _spawn(script, env, "first")
    new = first  # until it is started
    try:
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "PAUSED"  # step 1 ran, its record not sent
        os.kill(first.pid, signal.SIGSTOP)  # its renewal starves: the lease expires
        _remove_once_expired(s3_url)
        new = _spawn(script, env, "new")  # a fresh start, where step 1 fails
        assert new.stdout is not None
        assert new.stdout.readline().startswith("FAILED")
        _go_on(first)
        os.kill(first.pid, signal.SIGCONT)  # its PUT of step 1's record lands now
        said, _ = first.communicate(timeout=120)
        assert first.returncode == 4 and said.startswith("LEASE_LOST"), said
        store = durable.open_store(s3_url, skip_instance_cache=True)
        late = [k for k in store.list("late43/shared/") if k.endswith("steps/00000001")]
        assert len(late) == 1 and not late[0].startswith(record_base(store, "late43", "shared"))
        _go_on(new)  # the new run's resume
        out, _ = new.communicate(timeout=120)
        assert new.returncode == 0, out
    finally:
        for proc in (first, new):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
    tag, _, value = out.strip().partition(" ")
    assert (tag, json.loads(value)) == ("DONE", [f"0 by {new.pid}", f"1 by {new.pid}", f"2 by {new.pid}"])
    rows = [line.split() for line in log.read_text().splitlines()]
    executed = Counter((int(i), int(pid)) for i, pid in rows)
    # Step 1 twice in the new run: it failed, then its resume ran it (never the late record).
    assert executed == {(0, first.pid): 1, (1, first.pid): 1, (0, new.pid): 1, (1, new.pid): 2, (2, new.pid): 1}
    # The resume's holder deleted what the removed incarnation left.
    base = record_base(store, "late43", "shared")
    others = [k for k in store.list("late43/shared/") if INCARNATION in k and not k.startswith(base)]
    assert others == []
