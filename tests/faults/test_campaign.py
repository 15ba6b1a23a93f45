"""The fault campaign with small counts, so that it keeps being run
(`benchmarks/faults.py` runs it in full and prints its figures). Every
experiment must see zero violations; see the modules for what each checks."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from durable._storage import segmenter
from tests.faults import (
    cachelimit,
    damage,
    diskfull,
    environment,
    kills,
    live,
    retries,
    s3requests,
    samerun,
)
from tests.faults.common import Outcome, Place

pytestmark = pytest.mark.slow


def clean(outcome: Outcome, trials: int) -> None:
    assert outcome.trials >= trials, outcome
    assert outcome.violations == [], "\n".join(outcome.violations)


@pytest.fixture
def local(tmp_path: Path) -> Place:
    return Place(str(tmp_path / "store"), {}, tmp_path / "executions.log")


@pytest.fixture
def s3(tmp_path: Path, s3_url: str, s3_env: dict[str, str]) -> Place:
    return Place(s3_url, s3_env, tmp_path / "executions.log")


@pytest.mark.parametrize("durability", ["fsync", "batch", "none"])
@pytest.mark.parametrize("kind", ["sync", "async", "loop"])
def test_kill_9_at_random_moments_local(
    tmp_path: Path, kind: str, durability: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process crash loses nothing at any level: every record is written
    # (to the page cache) before its step returns; fsync only guards power loss.
    monkeypatch.setenv("DURABLE_DURABILITY", durability)
    local = Place(str(tmp_path / "store"), {}, tmp_path / "executions.log")
    clean(kills.kill_trials(local, kind, 4, random.Random(kind)), 4)


@pytest.mark.parametrize("checkpoint", [True, False])
@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_kill_9_over_item_retries(local: Place, kind: str, checkpoint: bool) -> None:
    # Items failing at random with retries=2: each makes at most the tries
    # its kept budget leaves, plus the one a kill cut short; none after its
    # result was kept (retries.py says what is checked).
    clean(retries.kill_trials(local, kind, checkpoint, 3, random.Random(kind)), 3)


@pytest.mark.parametrize("kind", ["sync", "async", "loop"])
def test_graceful_stop_at_random_moments(local: Place, kind: str) -> None:
    clean(kills.stop_trials(local, kind, 6, random.Random(kind)), 6)


@pytest.mark.parametrize("kind", ["sync", "loop"])
def test_kill_9_at_random_moments_s3(s3: Place, kind: str) -> None:
    clean(kills.kill_trials(s3, kind, 2, random.Random(kind)), 2)


def test_kill_9_at_random_moments_s3_with_segments(
    s3: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A segment every 2 records: kills land while a segment is written and
    # while the single objects it covers are removed; the resume (here, a
    # reader of both) replays exactly what was recorded.
    monkeypatch.setenv("FAULT_SEGMENT", "2")
    monkeypatch.setattr(segmenter, "SEGMENT_RECORDS", 2)
    clean(kills.kill_trials(s3, "sync", 4, random.Random("segments")), 4)


def test_truncation_and_bit_flips_across_log_manifest_and_blob(tmp_path: Path) -> None:
    Place(str(tmp_path / "store"), {}, tmp_path / "executions.log")
    outcome = damage.damage_every_offset(tmp_path, 17, random.Random(7))
    clean(outcome, 500)
    # A record cut from the log of a run that noted it is refused, never run
    # again (`finished`): every damage here ends in a named error.
    assert outcome.endings["CorruptRecordError"]


def test_planted_pickles_never_run(tmp_path: Path) -> None:
    Place(str(tmp_path / "store"), {}, tmp_path / "executions.log")
    clean(damage.planted_pickles(tmp_path / "plants"), 48)


def test_planted_symlinks_never_lead_outside(tmp_path: Path) -> None:
    Place(str(tmp_path / "store"), {}, tmp_path / "executions.log")
    clean(damage.planted_symlinks(tmp_path / "links"), 18)


def test_eight_processes_race_one_run_id(local: Place) -> None:
    clean(kills.race(local, 8, 2), 2)


def test_rm_against_start(local: Place) -> None:
    clean(kills.rm_against_start(local, 10), 20)


def test_file_size_limit(local: Place) -> None:
    clean(environment.file_size_limit(local, 3, random.Random(1)), 3)


def test_file_size_limit_over_cached_steps(tmp_path: Path) -> None:
    # Cache entries and blobs cut short too (cachelimit.py says what is checked).
    clean(cachelimit.file_size_limit_cached(tmp_path, 3, random.Random(8)), 3)


@pytest.mark.parametrize("durability", ["fsync", "batch", "none"])
@pytest.mark.parametrize("kind", ["sync", "loop"])
def test_disk_full_mid_record(
    local: Place, kind: str, durability: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_DURABILITY", durability)
    outcome = diskfull.disk_full(local, kind, 3, random.Random(kind + durability))
    if any(ending.startswith("skipped") for ending in outcome.endings):
        pytest.skip(next(iter(outcome.endings)))
    clean(outcome, 3)
    assert outcome.endings["ERROR"] >= 2, outcome.endings  # one write past the last at most


def test_read_only_store(local: Place) -> None:
    outcome = environment.read_only_store(local, 2, random.Random(2))
    if outcome.endings.get("skipped: cannot make a folder read-only here"):
        pytest.skip("no way to make a folder read-only here")
    clean(outcome, 2)


def test_deleted_store_folders(local: Place) -> None:
    clean(environment.deleted_store(local, 3, random.Random(3)), 3)


def test_s3_endpoint_cut(s3: Place, s3_endpoint: str) -> None:
    clean(environment.endpoint_cut(s3, s3_endpoint, 2, random.Random(4)), 2)


def test_sigstop_past_the_lease_on_s3(s3: Place) -> None:
    clean(environment.stopped_past_lease(s3, 1), 1)


def test_s3_request_failures_with_segments(s3: Place, s3_endpoint: str) -> None:
    # One PUT, GET or DELETE of a run failed (its answer lost, or it never
    # reached S3), as an outage or once; then a resume (s3requests.py says what is checked).
    trials = int(os.environ.get("FAULT_TRIALS", "6"))  # benchmarks/faults.py runs more
    outcome = s3requests.segmented_request_faults(s3, s3_endpoint, trials, random.Random(12))
    clean(outcome, trials)


def test_cli_during_a_live_run(local: Place) -> None:
    # show, rm, gc, recover, fork and cancel against a holder in a step,
    # then the holder let go or killed (live.py says what is checked).
    clean(live.cli_during_live_run(local, 4, random.Random(5)), 4)


def test_a_killed_fork(local: Place) -> None:
    clean(live.fork_killed(local, 3, random.Random(6)), 3)


def test_one_run_id_two_callers_in_one_process(tmp_path: Path) -> None:
    # Two threads, or two gathered tasks, with and without wait= (samerun.py).
    clean(samerun.same_run_at_once(tmp_path, 6, random.Random(9)), 6)
