"""Two contenders whose create-only writes both 'succeed' (a store that
checks and writes in two steps, as moto's server does under load) never
both hold the lease."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import durable
from durable._storage.objectlease import ObjectLease


class RacyObjects:
    """create() checks, then waits until every contender has checked, then
    writes: both conditional writes succeed and the last one stays."""

    def __init__(self, contenders: int) -> None:
        self.data: dict[str, bytes] = {}
        self.checked = threading.Barrier(contenders)
        self.written = threading.Barrier(contenders)
        self.lock = threading.Lock()
        self.races = contenders

    def get(self, key: str) -> bytes | None:
        with self.lock:
            return self.data.get(key)

    def create(self, key: str, data: bytes) -> bool:
        with self.lock:
            free = key not in self.data
            racing = self.races > 0  # only the contenders' first claims race
            self.races -= 1
        if racing:
            self.checked.wait()
        if free:
            with self.lock:
                self.data[key] = data
        if racing:
            self.written.wait()  # both writes land before either claimant looks again
        return free

    def list(self, prefix: str) -> list[str]:
        with self.lock:
            return sorted(k for k in self.data if k.startswith(prefix))

    def delete(self, keys: Iterable[str]) -> None:
        with self.lock:
            for k in list(keys):
                self.data.pop(k, None)


def test_racing_claims_that_both_succeed_leave_one_holder() -> None:
    objects = RacyObjects(2)
    won: list[ObjectLease] = []
    locked: list[durable.RunLockedError] = []

    def contend() -> None:
        try:
            won.append(ObjectLease(objects, "w/r/lease/", 30, "r"))
        except durable.RunLockedError as e:
            locked.append(e)

    threads = [threading.Thread(target=contend) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(won), len(locked)) == (1, 1)
    won[0].release()
