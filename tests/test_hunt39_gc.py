"""A whole-store `gc` listed the store twice: once for the runs' manifests,
once more for the objects left without one. Each leftover is judged again
under its lease (`delete.delete_run(leftover=True)`: kept when a manifest is
there by then), so one listing serves both: on S3, a listing of a big store
is thousands of requests."""

from __future__ import annotations

import durable
from tests.test_leftover_gc import _cut_after_manifest, executed, pieces


def test_a_whole_store_gc_lists_the_store_once() -> None:
    store = durable.open_store("memory://hunt39-gc-once")
    wf = pieces.with_options(store=store)
    for run_id in ("gone", "old", "whole"):
        assert wf.with_options(run_id=run_id)() == [0, 10, 20, 7]
    _cut_after_manifest(store, "gone")
    listed: list[str] = []
    real = type(store)

    class Counted(real):  # type: ignore[misc,valid-type]
        def list(self, prefix: str) -> list[str]:
            listed.append(prefix)
            return super().list(prefix)

    store.__class__ = Counted
    removed = durable.gc(store, keep_last=1)
    store.__class__ = real
    assert listed.count("") == 1
    assert sorted(r.run_id for r in removed) == ["old"]
    assert store.list("pieces/gone/") == [] and store.list("pieces/old/") == []
    executed.clear()
    assert wf.with_options(run_id="whole")() == [0, 10, 20, 7]
    assert executed == []
