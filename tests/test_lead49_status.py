"""A run's final status write failing must not be lost because the workflow
was called inside the caller's own `except` block: `finish` read the error
"being raised" from `sys.exc_info()`, found the caller's handled error there,
hung the storage error on it as a note and returned, so the call returned
its value while the run stayed `running` on the store."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._core import lifecycle
from durable._storage.manifest import read_manifest, write_manifest
from durable._storage.records import RunRecord
from durable.errors import StorageError


def test_a_status_write_failing_inside_a_callers_except_block_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = durable.open_store(str(tmp_path))
    ran: list[int] = []

    @durable.step
    def one() -> int:
        ran.append(1)
        return 1

    @durable.workflow(store=store, run_id="r")
    def w() -> int:
        return one()

    def full_at_the_end(store: durable.Store, manifest: RunRecord) -> None:
        if manifest.status == "completed":
            raise StorageError(str(store.url), "no space left on device (injected)")
        write_manifest(store, manifest)

    monkeypatch.setattr(lifecycle, "write_manifest", full_at_the_end)
    try:
        raise KeyError("the caller's own, handled")
    except KeyError:
        with pytest.raises(StorageError, match="injected"):
            w()
    monkeypatch.undo()
    found = read_manifest(store, w.name, "r")
    assert found is not None and found.status == "running"
    assert w() == 1 and ran == [1]  # the record kept: the step replays
