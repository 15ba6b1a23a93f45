"""Damage in bytes of a local run log that a sync under "batch" covered
while its attempt ran (the run's manifest notes what was synced only when
an attempt starts and ends): a power loss cannot leave it, so it is real
damage, refused as under "fsync". It was read as a power loss's past what
was synced: the log's end, and the steps recorded there, durable since,
ran a second time (hunt42's reading; `syncmark`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t
from tests.test_hunt42_power_loss_damage import _damage, _resume, killed_synced

pytestmark = pytest.mark.slow


def test_damage_a_batch_sync_covered_mid_attempt_is_refused(tmp_path: Path) -> None:
    # A sync after every record (the interval runs out at once); killed at the
    # start of step 3: 0, 1 and 2 recorded and synced, none of it noted.
    log = killed_synced(tmp_path, "batch")
    synced = max(int(x) for x in (tmp_path / "synced").read_text().split())
    assert synced == log.stat().st_size  # 0, 1 and 2 synced: the whole log
    at = _damage(tmp_path, "data")  # step 1's data zeroed, step 2's entry intact after it
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {at}\b"):
        _resume(tmp_path, "batch")  # was: a warning, then 1 and 2 ran again
    assert t.ran[before:] == []
