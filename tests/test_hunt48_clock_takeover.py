"""Two machines sharing a bucket whose clocks disagree by more than a lease
length: the holder, stopped (SIGSTOP) inside a step, is taken over by the
other machine once its lease stays unrenewed for a watch, whichever clock
runs ahead; continued, it must write nothing more (`LeaseLostError`), so a
takeover never leaves two holders writing one run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests import forkcli
from tests.test_lease_clock_skew import _holder

pytestmark = pytest.mark.slow  # moto and two processes


def test_a_stopped_holder_taken_over_across_clocks_writes_nothing_more(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    # The holder's clock 2 minutes ahead: by it, its lease is still good when
    # continued. (Behind by as much held as well in the trials: one case kept.)
    a, env, script, log = _holder(tmp_path, s3_url, s3_env, SKEW="120")
    assert a.stdout is not None and a.stdin is not None
    try:
        assert a.stdout.readline().strip() == "HOLDING"  # 0 recorded, A inside 1
        os.kill(a.pid, signal.SIGSTOP)
        b = forkcli.call([str(script)], tmp_path, dict(env, HOST="machine-b"))
        assert b.stdout.split() == ["DONE", "1", "2"], b.stdout + b.stderr
        os.kill(a.pid, signal.SIGCONT)
        a.stdin.write("\n")
        a.stdin.close()
        said = a.stdout.read()
        assert a.wait() == 0
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert said.startswith("LOCKED") and "lost" in said.lower(), said
    # A ran step 1 and wrote no record of it: the run is B's, as B recorded it.
    assert log.read_text().split() == ["machine-a:0", "machine-a:1", "machine-b:1", "machine-b:2"]
    again = forkcli.call([str(script)], tmp_path, dict(env, HOST="machine-b"))
    assert again.stdout.split()[0] == "DONE" and again.stdout.split()[2] == "0", again.stdout
    assert len(log.read_text().split()) == 4
