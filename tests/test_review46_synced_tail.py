"""Damage at the END of a local run log, in bytes a sync covered (a run
under "batch" whose syncs marked them, `syncmark`): the last record zeroed,
or the file cut short inside it. hunt47 made the resume refuse it
(`logcut.short_of`), but the read that found it had cut those bytes off
the file first (as a torn tail), fsynced: a record a sync had made durable
was destroyed by a reader, and the refusal's byte pointed at nothing. The
reader no longer cuts below the mark."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t
from tests.test_hunt42_power_loss_damage import _entry, _resume, _zero, killed_synced

pytestmark = pytest.mark.slow


def _killed_synced(tmp_path: Path) -> Path:
    records = killed_synced(tmp_path, "batch")
    assert max(int(x) for x in (tmp_path / "synced").read_text().split()) == records.stat().st_size
    return records


def test_damage_at_the_end_of_synced_bytes_is_refused(tmp_path: Path) -> None:
    records = _killed_synced(tmp_path)
    whole = records.read_bytes()
    size = len(whole)
    start, _ = _entry(records, "steps/00000002")
    _zero(records, start, size)  # step 2's entry zeroed, the log's last
    before = len(t.ran)
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}"):
        _resume(tmp_path, "batch")
    assert t.ran[before:] == []
    assert records.read_bytes() == whole[:start] + bytes(size - start)  # was: cut to 284 bytes
    # Its length made to run past the file's end: torn, as a writer killed
    # mid-append leaves it, but in bytes a sync covered.
    records.write_bytes(whole[:-5])
    with pytest.raises(durable.CorruptRecordError, match=rf"byte {start}"):
        _resume(tmp_path, "batch")
    assert t.ran[before:] == []
    assert records.read_bytes() == whole[:-5]  # was: cut to 284 bytes
