"""A run's log held open (`RunLog.hold`, every recorded step) sees what
changed under it before each append, whichever way it asks: another
process's appends and deletions (create-only holds), the file deleted
(the next record goes to a new file at the path, not into the dead one),
the file replaced by another (its records are the ones that count)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from durable._storage.keys import record_name
from durable._storage.log import RunLog
from tests.conftest import ROOT

WRITER = """
import sys
from durable._storage.keys import record_name
from durable._storage.log import RunLog
log = RunLog(sys.argv[1], "r")
assert log.create(record_name(5), b"theirs") is None
log.append([(record_name(1), None)])
"""


def _held(path: Path) -> RunLog:
    log = RunLog(str(path), "r")
    log.load()
    log.hold("none", 1.0)
    return log


def test_a_held_log_sees_another_writers_appends_and_deletions(tmp_path: Path) -> None:
    path = tmp_path / "records.log"
    log = _held(path)
    for n in range(3):
        assert log.create(record_name(n), b"ours%d" % n) is None
    assert log.is_open()  # appended through the file it holds
    subprocess.run([sys.executable, "-c", WRITER, str(path)], cwd=ROOT, check=True)
    assert log.create(record_name(5), b"late") == b"theirs"  # create-only: theirs stays
    assert log.create(record_name(1), b"again") is None  # their deletion is seen
    assert log.create(record_name(2), b"late") == b"ours2"
    log.release()
    assert RunLog(str(path), "r").load() == {
        record_name(0): b"ours0",
        record_name(1): b"again",
        record_name(2): b"ours2",
        record_name(5): b"theirs",
    }


def test_a_held_log_deleted_under_it_is_written_anew_at_its_path(tmp_path: Path) -> None:
    path = tmp_path / "records.log"
    log = _held(path)
    assert log.create(record_name(0), b"gone") is None
    os.unlink(path)
    assert log.create(record_name(1), b"kept") is None
    assert log.create(record_name(0), b"anew") is None  # the dead file's record is no more
    log.release()
    assert RunLog(str(path), "r").load() == {record_name(1): b"kept", record_name(0): b"anew"}


def test_a_held_log_replaced_under_it_answers_from_the_new_file(tmp_path: Path) -> None:
    path, other = tmp_path / "records.log", tmp_path / "other.log"
    log = _held(path)
    assert log.create(record_name(0), b"old") is None
    writer = RunLog(str(other), "r")
    assert writer.create(record_name(3), b"new") is None
    os.replace(other, path)  # a restore from a backup, by hand
    assert log.create(record_name(3), b"late") == b"new"
    assert log.create(record_name(0), b"fresh") is None  # the old file's record is not there
    log.release()
    assert RunLog(str(path), "r").load() == {record_name(3): b"new", record_name(0): b"fresh"}
