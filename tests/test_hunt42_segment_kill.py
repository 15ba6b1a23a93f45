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
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
pytest.importorskip("s3fs")

_CHILD = """\
import os, signal, sys, durable
from durable._storage import segmenter
from tests import test_hunt42_segment_kill as t
segmenter.SEGMENT_RECORDS = 2  # a flush every two records
real = segmenter.SegmentWriter._create
def create(self, name, data):
    real(self, name, data)
    if name.endswith(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
segmenter.SegmentWriter._create = create
t.flow.with_options(store=durable.open_store(sys.argv[1]))()
"""


ran: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    log = os.environ.get("HUNT42_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{i}\n")
    ran.append(i)
    return i * 10


@durable.workflow(name="s", run_id="s")
def flow() -> int:
    return sum(part(i) for i in range(7))


@pytest.mark.parametrize(
    ("after", "again"),
    [
        # The second flush (records 2 and 3) written, its singles not deleted.
        ("0000000002-0000000002", [4, 5, 6]),
        # At the release: flushes 1..4 merged into one, the four not deleted.
        ("0000000001-0000000004", []),
    ],
)
def test_a_kill_between_a_segment_and_its_deletions_loses_and_repeats_nothing(
    s3_url: str, tmp_path: Path, after: str, again: list[int]
) -> None:
    log = tmp_path / "ran.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HUNT42_LOG=str(log))
    argv = [sys.executable, "-c", _CHILD, s3_url, after]
    assert subprocess.run(argv, env=env, cwd=ROOT).returncode == -signal.SIGKILL
    assert [int(x) for x in log.read_text().split()] == ([0, 1, 2, 3] if again else list(range(7)))
    ran.clear()
    store = durable.open_store(s3_url)
    run = flow.with_options(store=store).resume("s") if again else None
    assert (run.value if run else flow.with_options(store=store)()) == 210
    assert ran == again
    assert [s.status for s in flow.with_options(store=store).history("s")][1:] == ["completed"] * 7
