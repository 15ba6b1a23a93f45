"""A run taken over from a killed holder and removed (`durable rm`) on an
object store keeps its released lease marker as the newest generation
(`ObjectLease.release`, runtime48). `durable rm`, `runs` and gc count a
lease alone as no run (`_manage/reads.more_than_a_lease`), and a new run of
that id starts at once; but a fork into that id (`--new-run-id`) was
refused as "already exists ... delete it first (durable rm ...)", and that
`durable rm` answered "no run": the id could not be forked into again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from durable._manage.delete import delete_run
from durable._manage.fork import fork_run
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a real process killed, moto's server

HOLDER = """
import os, sys, time
import durable

@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == 1 and sys.argv[2] == "gone":
        print("IN", flush=True)
        time.sleep(60)  # killed here
    return i

@durable.workflow(name="w")
def w() -> list:
    return [work(i) for i in range(3)]

w.with_options(store=durable.open_store(sys.argv[1]), run_id=sys.argv[2])()
"""


def test_a_fork_into_the_id_of_a_run_removed_after_its_holder_was_killed(tmp_path: Path, s3_url: str) -> None:
    log = tmp_path / "executions.log"
    (tmp_path / "holder.py").write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log))
    holder = subprocess.Popen(
        [sys.executable, str(tmp_path / "holder.py"), s3_url, "gone"], env=env, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "IN\n"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    store = durable.open_store(s3_url, skip_instance_cache=True)
    assert delete_run(store, "w", "gone")  # taken over from the killed holder: its marker kept
    assert [k.rsplit("/", 2)[1] for k in store.list("w/gone/")] == ["lease"]

    @durable.step(name="work")
    def work(i: int) -> int:
        with open(log, "a") as f:
            f.write(f"{i}\n")
        return i

    @durable.workflow(name="w", store=store)
    def w() -> list[int]:
        return [work(i) for i in range(3)]

    assert w.with_options(run_id="src")() == [0, 1, 2]
    assert fork_run(store, "w", "src", 2, new_run_id="gone") == "gone"
    assert w.resume("gone").value == [0, 1, 2]  # position 2 only runs again
    assert log.read_text().split() == ["0", "1", "0", "1", "2", "2"]
