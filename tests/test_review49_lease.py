"""A holder's renewal stalled (SIGSTOP, a PUT retried late) between deciding
to claim the next generation and writing it; meanwhile another process took
the run over and removed it (`durable rm`: every generation deleted). The
late create-only write lands on an empty prefix: no higher key is listed,
so the stray claim's rule (`objectlease._claim`: lost when a higher one
is) took it as won, and the holder that lost the run went on recording in
a run removed since. Its own generation, gone from the listing, says it
lost: only a claim above it or a removal deletes it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import durable
from durable._manage.delete import delete_run
from durable._storage.lease import owner_doc
from durable._storage.objectlease import ObjectLease
from tests import forkcli
from tests.conftest import ROOT

from . import s3proxy
from .test_object_lease_race import RacyObjects

PREFIX = "w/r/lease/"


def test_a_late_renewal_landing_after_a_takeover_and_a_removal_is_lost() -> None:
    objects = RacyObjects(1)
    held = ObjectLease(objects, PREFIX, 30, "r")
    try:
        # The taker: generation 2 (deleting ours), then the removal: every key.
        objects.create(f"{PREFIX}0000000002", json.dumps(owner_doc(30, "taker-token", 0.0)).encode())
        objects.delete([f"{PREFIX}0000000001"])
        objects.delete(objects.list(PREFIX))
        assert held._claim(2, []) is False  # was: True, the removed run held again
        assert objects.list(PREFIX) == []  # a new run of that id starts from nothing
    finally:
        held.release()
    assert objects.list(PREFIX) == []


def test_a_renewal_landing_in_time_is_won() -> None:
    objects = RacyObjects(1)
    held = ObjectLease(objects, PREFIX, 30, "r")
    try:
        assert held._renew() is True and held.generation == 2
        assert objects.list(PREFIX) == [f"{PREFIX}0000000002"]
    finally:
        held.release()


HOLDER = """
import os, sys
import durable

@durable.step(name="work")
def work(i: int) -> int:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\\\n")
    return i

@durable.workflow(name="late", run_id="r")
def late() -> list:
    return [work(i) for i in range(3)]

store = durable.open_store(sys.argv[1], lease_ttl=2)
try:
    print("DONE", late.with_options(store=store, wait=60)(), flush=True)
except durable.LeaseLostError:
    print("LEASE_LOST", flush=True)
"""


@pytest.mark.slow
def test_a_holder_whose_renewal_lands_after_a_takeover_and_a_removal_records_nothing(
    tmp_path: Path, s3_url: str, proxy: tuple[str, s3proxy.Faults]
) -> None:
    endpoint, faults = proxy
    script, log = tmp_path / "holder.py", tmp_path / "executions.log"
    script.write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), PYTHONUNBUFFERED="1")

    def holder(via: str) -> subprocess.Popen[str] | forkcli.Forked:
        return forkcli.popen([str(script), s3_url], tmp_path, dict(env, AWS_ENDPOINT_URL=via))

    faults.hold("/steps/00000001")  # step 1's record, then every PUT after it: its renewals too
    first = holder(endpoint)
    try:
        assert faults.held.wait(60)
        # Its lease runs out: a second process takes the run over and completes it,
        # then the run is removed (`durable rm`): every lease generation deleted.
        second, _ = holder(os.environ["AWS_ENDPOINT_URL"]).communicate(timeout=120)
        assert second.startswith("DONE"), second
        assert delete_run(durable.open_store(s3_url, skip_instance_cache=True), "late", "r")  # as `durable rm` does
    finally:
        faults.release()  # the held requests arrive now, the renewal's create among them
        said, _ = first.communicate(timeout=120)
    assert said.strip() == "LEASE_LOST", said  # was: DONE [0, 1, 2], recorded in the removed run
    store = durable.open_store(s3_url, skip_instance_cache=True)
    assert store.runs("late") == []  # was: ['r'], the removed run made again by the first holder
    assert [k for k in store.list("late/r/") if "/lease/" in k] == []
