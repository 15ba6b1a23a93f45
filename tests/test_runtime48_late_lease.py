"""A holder on another machine killed (`kill -9`) with its lease renewal
still on its way to S3; its run taken over once expired and removed
(`durable rm`: every generation deleted); then the renewal lands, on an
empty prefix: a lone generation naming a process gone, which no listing
could tell from a live holder's. A new run of that id was turned away
(`RunLockedError`) until that generation expired and was watched. A
removal that took the lease over from a holder that never released it
now keeps its released marker as the newest generation: a late claim of
that holder lands below it and decides nothing (the lease's own rule, "the
highest generation is never deleted")."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

import durable
from durable._manage.cleanup import leftovers
from durable._manage.delete import delete_run
from tests import forkcli
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real processes, moto's server

HOLDER = """
import os, socket, sys, time
socket.gethostname = lambda: "another-machine"  # its pid means nothing here
import durable

@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == 1:
        print("IN", flush=True)
        time.sleep(60)  # killed here
    return i

@durable.workflow(name="late", run_id="r")
def late() -> list:
    return [work(i) for i in range(3)]

late.with_options(store=durable.open_store(sys.argv[1], lease_ttl=1.5))()
"""

LEASE = "late/r/lease/"


def _lease(store: durable.Store) -> list[str]:
    return sorted(k for k in store.list(LEASE) if "/lease/" in k)


def test_a_late_renewal_of_a_killed_holder_after_a_removal_blocks_no_new_run(
    tmp_path: Path, s3_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "executions.log"
    (tmp_path / "holder.py").write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log))
    holder = forkcli.popen([str(tmp_path / "holder.py"), s3_url], tmp_path, env)
    assert holder.stdout is not None and holder.stdout.readline() == "IN\n"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    store = durable.open_store(s3_url, skip_instance_cache=True)
    [key] = _lease(store)
    doc = json.loads(store.get(key) or b"{}")
    # The renewal it sent as it died (the next generation, its document renewed),
    # which the network keeps until after the removal.
    gen = int(key.rsplit("/", 1)[1]) + 1
    late = dict(doc, since=time.time(), expires=time.time() + doc["expires"] - doc["since"])
    time.sleep(max(0.0, float(doc["expires"]) - time.time()))  # a lease of another host: its expiry
    assert delete_run(store, "late", "r")  # as `durable rm` does: taken over once watched
    # Its released marker, kept, is no run: not removed again, no leftover for gc.
    with pytest.raises(durable.RunNotFoundError):
        delete_run(store, "late", "r")
    assert leftovers(store, store.list("")) == []
    assert store.create(f"{LEASE}{gen:010d}", json.dumps(late).encode())  # it lands now
    store = durable.open_store(s3_url, skip_instance_cache=True)

    @durable.step(name="work")
    def work(i: int) -> int:
        with open(log, "a") as f:
            f.write(f"{i}\n")
        return i

    @durable.workflow(name="late", run_id="r", store=store)
    def late() -> list[int]:
        return [work(i) for i in range(3)]

    caplog.clear()
    assert late() == [0, 1, 2]
    # Was: "its lease, held by pid N on another-machine, expired ... taking the run over once
    # it stays unrenewed for 1.2 s more", and that wait (23 s for a lease of 30).
    assert "another-machine" not in caplog.text, caplog.text
    assert log.read_text().split() == ["0", "1", "0", "1", "2"]
