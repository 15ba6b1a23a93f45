"""A removal (`durable rm`) whose batch of blob deletions passed its lease
check and then stalled on its way, while another process started the run
afresh under the same id (S3, moto's server). Records and segments live in
the folder of their run's incarnation, but blobs (large outputs) lived at
the run's prefix, named by the sha256 of their bytes: the new run's step
produced the same output, found its blob already there and wrote nothing,
and its record pointed at a blob the removal's late batch then deleted. The
new run's resume failed (`CorruptRecordError`, "blob missing") on a record
nothing was wrong with. A run's blobs now live in its incarnation's folder
too: no record points at a blob another incarnation removes or writes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import warnings
from typing import Any

import pytest

import durable
from durable._storage.keys import INCARNATION
from durable._storage.pidspace import pid_space
from tests.test_fenced_delete import Removal

pytestmark = pytest.mark.slow  # moto's server

ran: list[str] = []
failing = [True]
BIG = b"x" * 4096  # over the store's blob threshold below: stored as a blob


@durable.step(name="big")
def big() -> bytes:
    ran.append("big")
    return BIG


@durable.step(name="last")
def last() -> int:
    ran.append("last")
    if failing[0]:
        raise RuntimeError("not yet")
    return 1


@durable.workflow(name="w", run_id="r")
def flow() -> int:
    return len(big()) + last()


class StalledBlobs(Removal):
    """The removal's store: its deletion of the run's blobs (its last batch)
    waits until `go`, past the lease check, as a stopped process's would."""

    def __init__(self, store: durable.Store) -> None:
        self.store, self.stalled, self.go = store, threading.Event(), threading.Event()
        real = store.delete

        def stalling(keys: Any) -> None:
            keys = list(keys)
            if any("/blobs/" in k for k in keys) and not self.stalled.is_set():
                self.stalled.set()
                assert self.go.wait(30)
            real(keys)

        store.delete = stalling  # type: ignore[method-assign]


def _looks_gone(store: durable.Store) -> None:
    """The removal's lease taken over: its holder looks gone (a dead pid)."""
    held: Any = store._held[("w", "r")]  # type: ignore[attr-defined]
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    now = time.time()
    gone = {"host": socket.gethostname(), "space": pid_space(), "pid": child.pid,
            "token": "old", "since": now, "expires": now + 60}  # fmt: skip
    store.put(f"w/r/lease/{held.generation + 1:010d}", json.dumps(gone).encode())


def test_a_late_blob_deletion_never_reaches_the_run_started_afresh(s3_url: str) -> None:
    def opened() -> durable.Store:
        return durable.open_store(s3_url, blob_threshold=1024)

    with pytest.raises(RuntimeError, match="not yet"):
        flow.with_options(store=opened()).run()  # big recorded as a blob, last failed
    remover = StalledBlobs(opened())
    removal = remover.remove()
    _looks_gone(remover.store)
    ran.clear()
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="not yet"):
        warnings.simplefilter("ignore")
        flow.with_options(store=opened()).run()  # a new run: big again, last fails
    assert ran == ["big", "last"]
    remover.go.set()  # the late batch lands
    removal.join(30)
    assert isinstance(remover.error, durable.LeaseLostError), remover.error
    ran.clear()
    failing[0] = False
    run = flow.with_options(store=opened()).resume("r")
    assert (run.value, ran) == (len(BIG) + 1, ["last"])
    # Its one blob in its incarnation's folder: `w/r/inc-<token>/blobs/<sha256>`.
    blobs = [k for k in opened().list("w/r/") if "/blobs/" in k]
    assert len(blobs) == 1 and blobs[0].split("/")[-3].startswith(INCARNATION), blobs
