"""The store conformance suite, part 1: the primitive key store. What
durable relies on above all: a create-only write that exactly one writer
wins, in threads and in processes; and listings and reads that see every
completed write of every client at once."""

from __future__ import annotations

import threading
from pathlib import Path

from .._storage.base import Store
from ._base import Opener, SuiteBase
from ._procs import children

# Keys as durable makes them: any printable characters but `/`-separated
# parts, no glob characters, no whitespace.
ODD_KEY = "wf-é.ü:1+2=3%20@x,~(y)/run-ß_9/steps/00000000"


class PrimitiveChecks(SuiteBase):
    def test_create_only_put_get_get_many_delete(self, opener: Opener) -> None:
        s = opener()
        assert s.get("w/r/steps/00000001") is None
        assert s.create("w/r/steps/00000001", b"first") is True
        assert s.create("w/r/steps/00000001", b"second") is False
        assert s.get("w/r/steps/00000001") == b"first"
        s.put("w/r/obj", b"m1")
        s.put("w/r/obj", b"m2")
        s.put("w/other/obj", b"x")
        assert s.get("w/r/obj") == b"m2"
        assert s.create("w/r/obj", b"m3") is False and s.get("w/r/obj") == b"m2"
        assert s.get_many(["w/r/obj", "w/r/missing", "w/other/obj"]) == {
            "w/r/obj": b"m2",
            "w/other/obj": b"x",
        }
        assert s.get_many([]) == {}
        s.delete(["w/r/obj", "w/r/never-existed"])
        assert s.get("w/r/obj") is None
        assert sorted(s.list("w/r/")) == ["w/r/steps/00000001"]
        assert s.create("w/r/obj", b"again") is True  # a deleted key is absent

    def test_keys_and_values_round_trip_exactly(self, opener: Opener) -> None:
        s = opener()
        values = {
            ODD_KEY: bytes(range(256)) * 3,
            "w/r/empty": b"",
            "w/r/big": bytes(range(251)) * 12_000,  # about 3 MB: a blob
        }
        for key, data in values.items():
            assert s.create(key, data) is True
        reader = opener()
        assert {k: reader.get(k) for k in values} == values
        assert reader.get_many(list(values)) == values
        assert sorted(reader.list("")) == sorted(values)
        assert reader.list(ODD_KEY.rsplit("/", 1)[0] + "/") == [ODD_KEY]

    def test_list_is_by_prefix_at_any_depth(self, opener: Opener) -> None:
        s = opener()
        keys = ["a/b/c", "a/b/d/e/f", "a/bc/x", "a/b2", "ab/c", "z/1"]
        for key in keys:
            s.put(key, key.encode())
        assert sorted(s.list("a/b/")) == ["a/b/c", "a/b/d/e/f"]
        assert sorted(s.list("a/")) == ["a/b/c", "a/b/d/e/f", "a/b2", "a/bc/x"]
        assert sorted(s.list("")) == sorted(keys)
        assert s.list("a/b/d/e/") == ["a/b/d/e/f"]
        assert s.list("nothing/here/") == []

    def test_delete_takes_any_iterable_and_ignores_missing_keys(self, opener: Opener) -> None:
        s = opener()
        for i in range(5):
            s.put(f"w/r/k{i}", b"v")
        s.delete([])
        s.delete(k for k in ["w/r/k0", "w/r/k1", "w/r/gone"])  # a generator, once
        s.delete(["w/r/gone"])
        assert sorted(s.list("w/r/")) == ["w/r/k2", "w/r/k3", "w/r/k4"]
        s.delete(s.list("w/"))
        assert s.list("") == []

    def test_another_client_sees_every_write_at_once(self, opener: Opener) -> None:
        reader = opener()
        assert reader.list("w/") == [] and reader.get("w/r/a") is None  # may cache
        writer = opener()
        writer.create("w/r/a", b"A")
        writer.put("w/r/b", b"B1")
        assert sorted(reader.list("w/")) == ["w/r/a", "w/r/b"]
        assert reader.get_many(["w/r/a", "w/r/b"]) == {"w/r/a": b"A", "w/r/b": b"B1"}
        writer.put("w/r/b", b"B2")
        writer.delete(["w/r/a"])
        assert reader.list("w/") == ["w/r/b"] and reader.get("w/r/b") == b"B2"
        assert reader.create("w/r/a", b"A2") is True

    def test_create_race_in_threads_has_one_winner(self, opener: Opener) -> None:
        stores = [opener() for _ in range(8)]
        for round_ in range(3):
            key = f"race/{round_}"
            won = _race_in_threads(stores, key)
            assert won.count(True) == 1, won
            assert opener().get(key) == b"writer %d" % won.index(True)

    def test_create_race_in_processes_has_one_winner(
        self, opener: Opener, tmp_path: Path
    ) -> None:
        self.needs_processes()
        with children(opener, tmp_path, 4) as procs:
            for round_ in range(2):
                key = f"race/{round_}"
                for i, child in enumerate(procs):  # all ready: each reads at once
                    child.send("create", key=key, data=(b"process %d" % i).hex())
                answers = [child.read() for child in procs]
                assert all("ok" in a for a in answers), answers  # an error names itself
                won = [a["ok"] for a in answers]
                assert won.count(True) == 1, won
                assert opener().get(key) == b"process %d" % won.index(True)


def _race_in_threads(stores: list[Store], key: str) -> list[bool]:
    barrier = threading.Barrier(len(stores))
    won = [False] * len(stores)

    def write(i: int) -> None:
        barrier.wait()
        won[i] = stores[i].create(key, b"writer %d" % i)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won
