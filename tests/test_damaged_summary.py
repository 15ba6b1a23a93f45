"""A manifest that decodes but whose summary fields have the wrong shape
(written by a foreign or broken writer: its checksum is right) is one
damaged run: `runs()`, `durable runs` and the look-up of a run id that only
another workflow has list or name it, and never raise its TypeError."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._storage.manifest import read_manifest, write_manifest

from .clikit import runs_json


def _planted(store: durable.Store) -> None:
    """Run r1 of workflow A, its manifest rewritten with a parent link and
    resumes that are no run's."""

    @durable.step
    def one() -> int:
        return 1

    @durable.workflow(store=store, run_id="r1", name="A")
    def a() -> int:
        return one()

    assert a() == 1
    manifest = read_manifest(store, "A", "r1")
    assert manifest is not None
    manifest.extra["parent"] = "A/r0@3"
    manifest.extra["resumes"] = [["yesterday", 1]]
    write_manifest(store, manifest)


def test_a_damaged_summary_of_another_workflows_run_is_listed_not_raised(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")
    _planted(store)

    @durable.workflow(store=store, name="B")
    def b() -> int:
        return 2

    with pytest.raises(durable.RunNotFoundError, match="exists under another workflow, 'A'"):
        b.resume("r1")
    (listed,) = durable.workflow(store=store, name="A")(lambda: 0).runs()
    assert listed.status == "corrupt"
    assert "A/r1/run" in (listed.error or "") and "durable rm" in (listed.error or "")


def test_durable_runs_lists_a_damaged_summary(tmp_path: Path) -> None:
    _planted(durable.open_store(tmp_path / "store"))
    assert [(r["runId"], r["status"]) for r in runs_json(tmp_path)] == [("r1", "corrupt")]
