"""A holder on S3 stopped (SIGSTOP) with its segment PUT past the lease
check: its records 0 and 1 are single objects, and the segment that moves
them is about to be sent. Another process waits out the lease, takes the
run over (moving the singles into a segment of its own), records the rest
and completes, merging its segments (the stopped holder's segment name is
free again then). Continued, the first holder's segment lands late: it must
neither hide nor contradict the new holder's records, the first holder must
stop (`LeaseLostError`) and start no step, and every step runs once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable
from tests.conftest import ROOT, record_base

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

pytest.importorskip("s3fs")


@durable.step(name="work")
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i} {os.getpid()}\n")
    return f"{i} by {os.getpid()}"


@durable.workflow(name="stopflush", run_id="shared")
def flow() -> list[str]:
    return [work(i) for i in range(4)]


# The holder: a segment every 2 records, and stopped (by itself) once its
# first segment PUT has passed the lease check.
HOLDER = """
import os, signal, sys
import durable
from durable._storage import segmenter
from durable._storage.objects import FsspecStore
from tests.test_hunt38_segment_stop import flow
segmenter.SEGMENT_RECORDS = 2
real = FsspecStore.create
def create(self, key, data):
    if "/segments/" in key and not getattr(create, "done", False):
        create.done = True
        os.kill(os.getpid(), signal.SIGSTOP)
    return real(self, key, data)
FsspecStore.create = create
store = durable.open_store(sys.argv[1], lease_ttl=2.0)
try:
    flow.with_options(store=store).run()
except durable.LeaseLostError:
    sys.exit(4)
"""


LATE = "segments/0000000001-0000000001"  # in the run's incarnation's folder


@pytest.mark.slow
def test_a_stopped_holders_late_segment_changes_nothing(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "executions.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), **s3_env)
    first = subprocess.Popen([sys.executable, "-c", HOLDER, s3_url], env=env, cwd=ROOT)
    try:
        _, status = os.waitpid(first.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)  # records 0 and 1 written, their segment on its way
        monkeypatch.setenv("COUNT_LOG", str(log))
        taken = flow.with_options(store=durable.open_store(s3_url), wait=120).run()
        assert taken.steps_replayed == 2
        store = durable.open_store(s3_url)
        before = store.peek_records("stopflush", "shared")
        base = record_base(store, "stopflush", "shared")  # a takeover keeps the incarnation
        assert base + LATE not in store.list(base + "segments/")
        os.kill(first.pid, signal.SIGCONT)
        assert first.wait(timeout=120) == 4
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
            first.wait()
    fresh = durable.open_store(s3_url)
    # It did land: under the name the new holder's merge had freed, inside that merge.
    assert base + LATE in fresh.list(base + "segments/")
    assert fresh.peek_records("stopflush", "shared") == before
    rows = [line.split() for line in log.read_text().splitlines()]
    ran = Counter((int(i), int(pid) == first.pid) for i, pid in rows)
    assert ran == {(0, True): 1, (1, True): 1, (2, False): 1, (3, False): 1}
    again = flow.with_options(store=fresh).run()
    assert (again.value, again.steps_executed) == (taken.value, 0)
    by = [int(v.split(" by ")[1]) for v in taken.value]
    assert by == [first.pid, first.pid, os.getpid(), os.getpid()]
