"""The step cache on every store (memory, local, S3): reuse through a store
opened again, signing and allow_pickle, pruning, and what runs refer to."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import durable
from durable._manage import cache as cache_admin
from durable.testing import FakeClock
from tests.conftest import Place

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


@durable.step(cache=True)
def pair(x: int) -> tuple[int, str]:
    CALLS["pair"] += 1
    return (x, "x" * x)


@durable.step(cache=True)
def text(x: int) -> str:
    CALLS["text"] += 1
    return "t" * x


def flow_on(store: durable.Store, name: str = "flow") -> durable.Workflow[[int], int]:
    @durable.workflow(store=store, name=name)
    def flow(x: int) -> int:
        return len(pair(x)[1])

    return flow


def test_an_output_is_reused_through_another_opening_of_the_store(place: Place) -> None:
    assert flow_on(place.open(), "one")(3) == 3
    other = place.open(own_client=True)  # another process's view of the store
    assert flow_on(other, "two")(3) == 3
    assert CALLS["pair"] == 1
    assert [e.step for e in cache_admin.list_entries(other)] == [pair.name]


def test_entries_are_sealed_with_the_signing_key(place: Place) -> None:
    assert flow_on(place.open(signing_key="k1"))(4) == 4
    assert flow_on(place.open(own_client=True, signing_key="k1"), "again")(4) == 4
    assert CALLS["pair"] == 1
    others = [place.open(own_client=True, signing_key="k2"), place.open(own_client=True)]
    for i, other in enumerate(others):
        with pytest.raises(durable.IntegrityError, match="durable cache clear"):
            flow_on(other, f"forged{i}")(4)
    assert CALLS["pair"] == 1  # a refusal executes nothing


def test_entries_failing_the_signature_check_are_listed_cleared_never_pruned(
    place: Place,
) -> None:
    """After a key change (or a forged entry): every cached call meeting one
    raises IntegrityError, whose message says `durable cache clear`; ls
    shows them, prune leaves them (and their blobs) alone, clear removes them."""
    signed = place.open(signing_key="k1", blob_threshold=32)

    @durable.step(cache=True)
    def big(n: int) -> str:
        CALLS["big"] += 1
        return "b" * n

    @durable.workflow(store=signed, name="signed")
    def flow(x: int) -> int:
        return len(pair(x)[1]) + len(big(100))

    assert flow(2) == 102
    for run in flow.runs():  # no run refers to the blob: only the entry keeps it
        flow.delete(run.run_id)
    other = place.open(own_client=True, signing_key="k2")
    listed = cache_admin.list_entries(other)
    assert sorted((i.step, i.verified, i.size) for i in listed) == sorted(
        [(big.name, False, 0), (pair.name, False, 0)]
    )
    gone, blobs, skipped = cache_admin.prune(other, older_than=0, max_size=0)
    assert (gone, blobs, len(skipped)) == ([], 0, 2)
    assert len(cache_admin.list_entries(signed)) == 2  # still good under k1, blob included
    assert flow.with_options(run_id="again")(2) == 102 and CALLS == {"pair": 1, "big": 1}
    gone, _ = cache_admin.clear(other, pair.name)
    assert [(g.step, g.verified) for g in gone] == [(pair.name, False)]
    for run in flow.runs():  # nothing refers to the blob any more: clear deletes it
        flow.delete(run.run_id)
    gone, blobs = cache_admin.clear(other)
    assert ([(g.step, g.verified) for g in gone], blobs) == ([(big.name, False)], 1)
    assert cache_admin.list_entries(signed) == []


def test_allow_pickle_false_refuses_a_pickled_entry(place: Place) -> None:
    flow_on(place.open())(2)  # a tuple: pickled
    strict = place.open(own_client=True, allow_pickle=False)
    with pytest.raises(durable.IntegrityError, match="allow_pickle=False"):
        flow_on(strict, "strict")(2)

    @durable.workflow(store=strict, name="plain")
    def plain(x: int) -> str:
        return text(x)

    assert plain(2) == plain.with_options(run_id="other")(2) == "tt"
    assert CALLS == {"pair": 1, "text": 1}  # plain data is cached under allow_pickle=False


def test_prune_removes_the_least_recently_used_first(place: Place, clock: FakeClock) -> None:
    store = place.open()

    @durable.workflow(store=store, name="sizes")
    def sizes(xs: list[int]) -> list[str]:
        return [text(x) for x in xs]

    sizes([10, 20, 30])
    clock.now += 3600
    sizes.with_options(run_id="later")([10])  # a hit marks 10 as used now
    assert CALLS["text"] == 3
    dry, _, _ = cache_admin.prune(store, older_than=1800, dry_run=True)
    assert sorted(i.size for i in dry) == [21, 31]  # msgpack: one byte of header
    assert len(cache_admin.list_entries(store)) == 3
    gone, _, _ = cache_admin.prune(store, max_size=25)  # 11 + 21 + 31: keep the newest use
    assert sorted(i.size for i in gone) == [21, 31]
    sizes.with_options(run_id="third")([10, 20])
    assert CALLS["text"] == 4  # 10 was kept, 20 computed again
    clock.now += 7 * 86400
    gone, _, _ = cache_admin.prune(store, older_than=86400)
    assert len(gone) == 2 and cache_admin.list_entries(store) == []


def test_blobs_that_runs_refer_to_survive_clear_and_prune(place: Place) -> None:
    store = place.open(blob_threshold=32)

    @durable.step(cache=True)
    def big(n: int) -> str:
        CALLS["big"] += 1
        return "b" * n

    @durable.workflow(store=store, name="big")
    def flow(n: int, fail: bool = False) -> int:
        size = len(big(n))
        if fail:
            raise RuntimeError("stop after the cached step")
        return size

    for run_id in ("a", "b"):
        with pytest.raises(RuntimeError):
            flow.with_options(run_id=run_id)(100, fail=True)
    assert CALLS["big"] == 1
    cache_admin.clear(store)  # the entry goes; both runs still point at the blob
    assert cache_admin.list_entries(store) == []
    flow.delete("a")  # removing run a (gc's path too) must not remove what b refers to
    assert [r.run_id for r in flow.runs()] == ["b"]
    cache_admin.prune(store, max_size=0)
    assert flow.resume("b", fail=False).value == 100
    assert CALLS["big"] == 1  # replayed from its record, through the kept blob
    flow.delete("b")
    _, blobs = cache_admin.clear(store)
    assert blobs == 1
    assert [k for k in store.list("") if "/blobs/" in k] == []


def test_removing_runs_never_removes_cache_entries(place: Place) -> None:
    store = place.open()
    flow = flow_on(store)
    flow.with_options(run_id="r1")(5)
    flow.delete("r1")
    durable.gc(store, keep_last=1)
    assert flow.with_options(run_id="r2")(5) == 5
    assert CALLS["pair"] == 1


def test_a_run_whose_cached_blob_was_pruned_meanwhile_runs_the_step_again(place: Place) -> None:
    store = place.open(blob_threshold=32)

    @durable.step(cache=True)
    def big(n: int) -> str:
        CALLS["big"] += 1
        return "b" * n

    @durable.workflow(store=store, name="pruned")
    def flow(n: int, fail: bool = False) -> int:
        size = len(big(n))
        if fail:
            raise RuntimeError("stop after the cached step")
        return size

    with pytest.raises(RuntimeError):
        flow.with_options(run_id="r")(50, fail=True)
    # What a prune racing with the hit would leave: the record, not its blob.
    store.delete(store.list("cache/"))
    resumed = flow.resume("r", fail=False)
    assert (resumed.value, resumed.steps_replayed, CALLS["big"]) == (50, 0, 2)
    assert flow.history("r")[0].status == "completed"


def test_a_hit_the_store_cannot_mark_used_is_still_served(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A team mate reading a cache shared under umask 027 (or a read-only
    mount): the hit read the value, then failed with StorageError writing
    its cache/used marker, a hint for prune's order only."""
    flow = flow_on(durable.open_store(str(tmp_path)))
    assert flow(3) == 3
    (tmp_path / "cache" / "used").write_text("a file where a folder goes: no marker fits")
    clock.now += 3600  # past the minute in which a process marks an entry used once
    with pytest.warns(UserWarning, match="could not mark"):
        assert flow_on(durable.open_store(str(tmp_path)), "again")(3) == 3
    assert CALLS["pair"] == 1
