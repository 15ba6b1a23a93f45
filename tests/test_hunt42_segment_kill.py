"""A holder on S3 killed (`kill -9`) right after a segment PUT, before it
deleted what that segment replaces: the single objects it moved (a flush),
or the segments it merged (at the run's release). Both copies are then
there, alike: a resume must read each record once, run no finished step
again, and the run's value stays right."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import durable
from tests import test_hunt40_killed_first as t

pytestmark = pytest.mark.slow
pytest.importorskip("s3fs")

# The flow of five steps the kill tests share (`t.flow`), a flush every two
# records: segment 2 holds records 2 and 3; at the release record 4 goes
# into segment 3, then segments 1 to 3 are merged into one.
_CHILD = """\
import os, signal, sys, durable
from durable._storage import segmenter
from tests import test_hunt40_killed_first as t
segmenter.SEGMENT_RECORDS = 2
real = segmenter.SegmentWriter._create
def create(self, name, data):
    real(self, name, data)
    if name.endswith(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
segmenter.SegmentWriter._create = create
t.flow.with_options(store=durable.open_store(sys.argv[1])).run()
"""


@pytest.mark.parametrize(
    ("after", "first", "again"),
    [("0000000002-0000000002", [0, 1, 2, 3], [4]), ("0000000001-0000000003", [0, 1, 2, 3, 4], [])],
)
def test_a_kill_between_a_segment_and_its_deletions_loses_and_repeats_nothing(
    s3_url: str, tmp_path: Path, after: str, first: list[int], again: list[int]
) -> None:
    log = tmp_path / "ran.log"
    env = dict(os.environ, PYTHONPATH=str(t.ROOT), HUNT40_LOG=str(log))
    argv = [sys.executable, "-c", _CHILD, s3_url, after]
    assert subprocess.run(argv, env=env, cwd=t.ROOT).returncode == -signal.SIGKILL
    assert [int(x) for x in log.read_text().split()] == first
    before = len(t.ran)  # counted without a change to `t.ran`, as test_hunt41_last_record does
    flow = t.flow.with_options(store=durable.open_store(s3_url))
    assert (flow.resume("r").value if again else flow()) == 100
    assert t.ran[before:] == again
    assert [s.status for s in flow.history("r")][1:] == ["completed"] * 5
