"""The record formats: a run log written before issue 13 (records sealed
with SHA-256, `tests/data/log_v1`) still replays, and the CRC envelope of
unsigned records tells damage and refuses a signed store."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from durable._storage.records import seal, seal_record, unseal
from durable.errors import CorruptRecordError, IntegrityError

OLD = Path(__file__).parent / "data" / "log_v1"


def run_old_flow(where: Path, env: dict[str, str]) -> tuple[str, list[str]]:
    counts = where / "counts"
    child = subprocess.run(
        [sys.executable, str(where / "flow.py")],
        env=dict(env, DURABLE_STORE=str(where / "store"), FLOW_COUNTS=str(counts), FLOW_REBASE="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    ran = counts.read_text().split() if counts.exists() else []
    counts.unlink(missing_ok=True)
    return child.stdout.strip(), ran


def test_a_log_written_by_the_previous_format_still_replays(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    where = tmp_path / "old"
    shutil.copytree(OLD, where)
    log = where / "store" / "flow.flow" / "old" / "records.log"
    assert b"DRB2\x00" in log.read_bytes()  # SHA-256 sealed records
    out, ran = run_old_flow(where, child_env)
    # The two recorded steps replay (one plain, one pickled); only the last runs.
    value = "[{'n': 3, 'items': [1, 2.5, None, 'x', b'y']}, [1, 2], 30]"
    assert ran == ["last"]
    assert f"value={value}" in out and "steps_replayed=2, steps_executed=1" in out
    assert b"DRB2\x02" in log.read_bytes()  # the new record, CRC-sealed, in the same log
    out, ran = run_old_flow(where, child_env)  # completed: its outcome comes back
    assert ran == [] and f"value={value}" in out


def test_a_crc_sealed_record_tells_damage_and_a_missing_signature() -> None:
    body = b"\x93\x01\x02\x03" * 10
    sealed = seal_record(body, None)
    assert len(sealed) == len(body) + 9 < len(seal(body, None))
    assert unseal(sealed, None, run_id="r", position=None, name="n") == body
    for at in range(4, len(sealed)):
        bad = bytearray(sealed)
        bad[at] ^= 0x10
        with pytest.raises((CorruptRecordError, IntegrityError)):
            unseal(bytes(bad), None, run_id="r", position=None, name="n")
    with pytest.raises(CorruptRecordError):
        unseal(sealed[:7], None, run_id="r", position=None, name="n")
    with pytest.raises(IntegrityError, match="not signed"):
        unseal(sealed, b"key", run_id="r", position=None, name="n")
    signed = seal_record(body, b"key")  # a signing key: HMAC-SHA256 as before
    assert unseal(signed, b"key", run_id="r", position=None, name="n") == body


def test_the_fixture_is_the_old_format() -> None:
    assert os.path.getsize(OLD / "store" / "flow.flow" / "old" / "records.log") == 363
