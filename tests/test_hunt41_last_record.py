"""The last record a killed attempt wrote has no later one to tell of it
(`_storage.noted`): what may take it is exactly what its durability level
allows. A `kill -9` takes no record written; a power loss after it takes,
under "fsync", no record whose step returned (each was synced before it
returned), and under "batch" the records of the last interval, which run
again (docs/storage.md, durability levels)."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("level", "again"), [("fsync", [3, 4]), ("batch", [0, 1, 2, 3, 4])])
def test_a_power_loss_after_a_kill_takes_what_the_level_allows(
    tmp_path: Path, level: str, again: list[int]
) -> None:
    # Killed at the start of step 3: 0, 1 and 2 returned. Under "batch" the
    # child syncs once an hour (`sync_interval`): none of them was synced.
    assert t._killed(tmp_path, kill_at=3, level=level, power_loss=True) == [0, 1, 2, 3]
    # Counted without a change to `t.ran` from here: a module that changes a
    # list a step fills changes the step's fingerprint in the processes
    # that load it, and the child does not.
    before = len(t.ran)
    store = durable.open_store(tmp_path / "s", durability=level)
    assert t.flow.with_options(store=store).resume("r").value == 100
    assert t.ran[before:] == again
