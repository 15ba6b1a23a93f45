"""Two machines sharing a bucket, the holder's clock ahead of the
contender's by more than a lease length: the holder's lease expires, by its
own clock, in what is still the contender's future. Killed (SIGKILL), the
holder left the run locked on every other machine for as long as its clock
was ahead (hours after a VM restore), `RunLockedError` saying the lease
"expires" at a time nothing could change. A lease written in the reader's
future by more than its own length is now watched as an expired one is
(`ObjectLease._silent`): taken over once it stays unrenewed for as long as
a live holder could trust it, whatever either clock says; a live holder
renews within that time and keeps the run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests import forkcli
from tests.test_lease_clock_skew import _holder

pytestmark = pytest.mark.slow  # moto and three processes


def test_a_holder_whose_clock_is_ahead_by_more_than_a_lease(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    a, env, script, log = _holder(tmp_path, s3_url, s3_env, SKEW="120")
    assert a.stdout is not None

    def contender() -> str:
        b = forkcli.call([str(script)], tmp_path, dict(env, HOST="machine-b"))
        return b.stdout + b.stderr

    try:
        assert a.stdout.readline().strip() == "HOLDING"  # 0 recorded, 1 running
        # Alive, A renews its lease while B watches it: the run stays A's.
        assert contender().startswith("LOCKED")
        os.kill(a.pid, signal.SIGKILL)
        a.wait()
        # Dead: B takes the run over once A's lease stayed unrenewed long
        # enough (before, only once B's clock reached A's expiry, 2 minutes
        # on), replays step 0, runs 1 (A died inside it) and 2.
        assert contender().split() == ["DONE", "1", "2"]
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert log.read_text().split() == ["machine-a:0", "machine-a:1", "machine-b:1", "machine-b:2"]
