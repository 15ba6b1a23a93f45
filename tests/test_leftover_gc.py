"""Objects left over without a manifest (a fork or a removal killed half
way) are no run: no listing shows them. Before, `gc` never removed them
either: they stayed in the store for good, taking room, until someone
guessed the run id for `durable rm`. A whole-store gc now removes them,
under the run's lease (a fork still copying holds it, and is left alone),
and only while there is still no manifest; a new run of that id never
replays them (test_leftover_records)."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._storage.keys import generation_of, run_of

executed: list[int] = []


@durable.step(name="piece")
def piece(i: int) -> int:
    executed.append(i)
    return i * 10


@durable.step(name="kept", cache=True)
def kept(i: int) -> int:
    return i


@durable.workflow(name="pieces")
def pieces() -> list[int]:
    return [piece(i) for i in range(3)] + [kept(7)]


def _cut_after_manifest(store: durable.Store, run_id: str) -> None:
    """What a removal killed once its manifest went leaves: the rest."""
    keys = store.list(f"pieces/{run_id}/")
    store.delete([k for k in keys if run_of(k) or generation_of(k)])
    assert store.list(f"pieces/{run_id}/")


def _records(store: durable.Store, run_id: str) -> list[str]:
    return [k for k in store.list(f"pieces/{run_id}/") if "/lease" not in k]


@pytest.fixture(params=["local", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> durable.Store:
    return durable.open_store(tmp_path if request.param == "local" else "memory://leftover-gc")


def test_a_whole_store_gc_removes_objects_left_without_a_manifest(store: durable.Store) -> None:
    wf = pieces.with_options(store=store)
    for run_id in ("gone", "whole"):
        assert wf.with_options(run_id=run_id)() == [0, 10, 20, 7]
    _cut_after_manifest(store, "gone")
    cache = store.list("cache/")
    assert cache
    assert durable.gc(store, status="failed", dry_run=True) == []
    assert store.list("pieces/gone/")  # a dry run removes nothing
    assert durable.gc(store, status="failed") == []  # no run matched: leftovers are no run
    assert store.list("pieces/gone/") == []
    assert [r.run_id for r in wf.runs()] == ["whole"]  # the runs and the cache stay
    assert store.list("cache/") == cache
    executed.clear()
    assert wf.with_options(run_id="whole")() == [0, 10, 20, 7]
    assert executed == []
    assert wf.with_options(run_id="gone")() == [0, 10, 20, 7]
    assert executed == [0, 1, 2]


def test_gc_leaves_the_leftovers_of_a_run_whose_lease_is_held(store: durable.Store) -> None:
    """A fork copies its records before its manifest, holding the new run's
    lease all along: those are not leftovers yet."""
    wf = pieces.with_options(store=store, run_id="copying")
    assert wf() == [0, 10, 20, 7]
    _cut_after_manifest(store, "copying")
    left = _records(store, "copying")
    held = store.acquire("pieces", "copying", 60.0)
    try:
        assert durable.gc(store, status="failed") == []
        assert _records(store, "copying") == left
    finally:
        held.release()


def test_gc_leaves_a_folder_of_files_durable_did_not_write(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path)
    assert pieces.with_options(store=store, run_id="r")() == [0, 10, 20, 7]
    (tmp_path / "notes" / "2026").mkdir(parents=True)
    (tmp_path / "notes" / "2026" / "todo.txt").write_text("mine")
    assert durable.gc(store, status="failed") == []
    assert (tmp_path / "notes" / "2026" / "todo.txt").read_text() == "mine"
