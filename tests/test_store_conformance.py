"""durable's own stores pass the public store conformance suite
(`durable.testing.store_conformance`): memory, local disk and S3 (moto over
HTTP). Below it, what only these stores have: the local store's own log
beside the object layout, and the object lease's takeover rules."""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.base import Store
from durable._storage.recordlog import ObjectRecords
from durable.testing._runs import check_append_is_create_only, check_replace_names_and_compact
from durable.testing.store_conformance import Opener, StoreConformance
from tests.conftest import Place


class TestMemoryStore(StoreConformance):
    shared_across_processes = False

    @pytest.fixture
    def opener(self) -> Opener:
        return functools.partial(durable.open_store, f"memory://conformance-{uuid.uuid4().hex}")


class TestLocalStore(StoreConformance):
    leases_expire = False  # an OS lock, dropped when its holder dies

    @pytest.fixture
    def opener(self, tmp_path: Path) -> Opener:
        return functools.partial(durable.open_store, str(tmp_path / "store"))


class TestS3Store(StoreConformance):
    @pytest.fixture
    def opener(self, s3_url: str) -> Opener:
        # Each client its own s3fs instance and listing cache, as another
        # process would have (the AWS_* variables reach the children).
        return functools.partial(durable.open_store, s3_url, skip_instance_cache=True)


# -- the record log over the store's primitives, beside its own ---------------


def test_the_object_layout_works_over_every_store(place: Place) -> None:
    check_append_is_create_only(lambda: ObjectRecords(place.open(own_client=True), "w", "r"))
    check_replace_names_and_compact(lambda: ObjectRecords(place.open(own_client=True), "w", "x"))


def test_the_native_log_of_a_store_is_its_run_records(place: Place) -> None:
    store = place.open()
    store.save_record("w", "r", "steps/00000000", b"rec")
    store.save_manifest("w", "r", b"manifest")
    store.put_blob("w", "r", b"blob")
    log = store.records("w", "r")
    assert log.read_all() == store.load_records("w", "r") == {"steps/00000000": b"rec"}
    assert store.record_names("w", "r") == ["steps/00000000"]  # manifest and blobs are not records
    expected = "LogRecords" if place.kind == "local" else "ObjectRecords"
    assert type(log).__name__ == expected


def test_get_heads_reads_leading_bytes(place: Place) -> None:
    s = place.open()
    s.put("w/r/obj", b"m2")
    assert s.get_heads(["w/r/obj", "w/r/missing"], 1) == {"w/r/obj": b"m"}


# -- object leases: the takeover rules ----------------------------------------


def plant(store: Store, owner: dict[str, Any], gen: int = 7) -> None:
    store.put(f"w/r/lease/{gen:010d}", json.dumps(owner).encode())


def doc(*, host: str, expires: float, pid: int = 4242) -> dict[str, Any]:
    return {"host": host, "pid": pid, "token": "t", "since": expires - 30, "expires": expires}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_contenders_for_an_expired_object_lease_one_wins(place: Place) -> None:
    if not place.object_leases:
        pytest.skip("local disk uses flock")
    plant(place.open(), doc(host="elsewhere", expires=time.time() - 1))
    StoreConformance().test_contenders_in_threads_one_wins(place.open)


@pytest.mark.parametrize(
    ("who", "free"),
    [
        ("live holder elsewhere", False),
        ("expired holder elsewhere", True),
        ("dead process on this host", True),
        ("released", True),
        ("garbage", True),
    ],
)
def test_object_lease_takeover_rules(place: Place, who: str, free: bool) -> None:
    if not place.object_leases:
        pytest.skip("local disk uses flock; a dead holder is covered in test_store_race")
    now = time.time()
    owner: dict[str, Any] = {
        "live holder elsewhere": doc(host="elsewhere", expires=now + 60),
        "expired holder elsewhere": doc(host="elsewhere", expires=now - 1),
        "dead process on this host": doc(
            host=socket.gethostname(), expires=now + 60, pid=dead_pid()
        ),
        "released": {"released": True, "token": "t"},
        "garbage": {},
    }[who]
    s = place.open()
    plant(s, owner)
    if not free:
        with pytest.raises(durable.RunLockedError) as err:
            s.acquire("w", "r", 30)
        assert err.value.holder == "pid 4242 on elsewhere"
        assert err.value.expires == pytest.approx(now + 60)
        assert "with_options(wait=" in str(err.value)
        return
    lease = s.acquire("w", "r", 30)
    # The claim is the next generation, and the dead one is cleaned away.
    assert s.list("w/r/lease/") == ["w/r/lease/0000000008"]
    lease.release()


def test_object_lease_renews_in_background_and_notices_takeover(place: Place) -> None:
    if not place.object_leases:
        pytest.skip("flock needs no renewal")
    s = place.open(lease_ttl=1.5)
    lease: Any = s.acquire("w", "r", 30)
    first = lease.generation
    wait_for(lambda: lease.generation > first + 1)  # two renewals
    with pytest.raises(durable.RunLockedError) as err:
        place.open().acquire("w", "r", 30)
    assert err.value.expires > time.time()
    # Someone else claims the next generation (as after a long stall): the
    # holder finds out at its next renewal and stops renewing.
    plant(s, doc(host="elsewhere", expires=time.time() + 60), gen=lease.generation + 1)
    wait_for(lambda: lease.lost)
    lease.release()  # does not touch the new holder's lease
    with pytest.raises(durable.RunLockedError, match="elsewhere"):
        place.open().acquire("w", "r", 30)


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.02)
