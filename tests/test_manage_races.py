"""Management commands run from the command line while another process is
in the middle of a run (DESIGN §4): none of them may take away what the live
run then needs. The live process stops at a file barrier this test controls
(no sleeps), the command runs in its own process, the barrier opens, and a
resume counts what ran again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import durable
    import durable._core.cache as engine_cache

    here = Path(sys.argv[1])
    store = durable.open_store(here / "store", blob_threshold=1000)

    def count(what):
        with open(here / what, "a") as f:
            f.write("x\\n")

    def barrier(name):
        (here / f"at-{name}").touch()
        while not (here / f"go-{name}").exists():
            time.sleep(0.01)

    if os.environ.get("BARRIER"):
        served = engine_cache.served

        def served_at_barrier(*args, **kwargs):
            barrier(os.environ["BARRIER"])  # the hit's entry is read, its reference not yet written
            return served(*args, **kwargs)

        engine_cache.served = served_at_barrier

    @durable.step(name="big", cache=True)
    def big(n: int) -> bytes:
        count("big")
        return b"x" * n

    @durable.step(name="after")
    def after() -> int:
        count("after")
        if os.environ.get("FAIL"):
            raise RuntimeError("failed on purpose")
        return 1

    @durable.workflow(name="wf")
    def wf() -> int:
        return len(big(5000)) + after()

    if sys.argv[2] == "seed":
        durable.configure(store=store)
        big(5000)
    else:
        try:
            print(wf.with_options(store=store, run_id="r")())
        except RuntimeError as e:
            print("failed:", e)
    """
)


def _lines(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never reached"
        time.sleep(0.01)


def _python(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(tmp_path / "flow.py"), str(tmp_path), *args],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def _durable(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "durable", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "command",
    [["cache", "clear"], ["cache", "prune", "--max-size", "0"]],
    ids=["clear", "prune"],
)
def test_a_cache_removal_during_an_in_run_hit_keeps_what_the_run_recorded(
    tmp_path: Path, command: list[str]
) -> None:
    """The run is served a large value from the cache (its record points at
    the cache's blob) while `cache clear` removes the entry and sweeps the
    blobs: the run's record must still have its value on resume, not run
    the step again."""
    (tmp_path / "flow.py").write_text(SCRIPT)
    _python(tmp_path, "seed")
    assert _lines(tmp_path / "big") == 1
    live = subprocess.Popen(
        [sys.executable, str(tmp_path / "flow.py"), str(tmp_path), "run"],
        env={**os.environ, "BARRIER": "hit", "FAIL": "1"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_for(tmp_path / "at-hit", live)
        done = _durable(*command, "--store", str(tmp_path / "store"))
        assert done.returncode == 0, done.stderr
        (tmp_path / "go-hit").touch()
        out, err = live.communicate(timeout=120)
    finally:
        live.kill()
    assert "failed: failed on purpose" in out, err
    assert _lines(tmp_path / "big") == 1  # served from the cache
    resumed = _python(tmp_path, "run")
    assert resumed.stdout.split() == ["5001"], resumed.stderr
    assert _lines(tmp_path / "big") == 1, "the recorded step ran again"
    assert _lines(tmp_path / "after") == 2


# A step that is not deterministic: a second computation of the call stores
# another value (and so another blob) under the same entry key.
NOT_DETERMINISTIC = SCRIPT.replace(
    'return b"x" * n', 'return b"x" * (n + int(os.environ.get("MORE", "0")))'
)
assert NOT_DETERMINISTIC != SCRIPT


def test_an_entry_written_again_after_a_clear_does_not_vouch_for_the_blob_the_run_was_served(
    tmp_path: Path,
) -> None:
    """As above, but after `cache clear` another process computes the call
    again and writes a new entry (another value, another blob) at the same
    key before the run re-reads it: an entry is there, yet not the one that
    named the run's blob, which the sweep deleted. The run must keep its own
    copy, not run the recorded step again on resume."""
    (tmp_path / "flow.py").write_text(NOT_DETERMINISTIC)
    _python(tmp_path, "seed")
    live = subprocess.Popen(
        [sys.executable, str(tmp_path / "flow.py"), str(tmp_path), "run"],
        env={**os.environ, "BARRIER": "hit", "FAIL": "1"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_for(tmp_path / "at-hit", live)
        done = _durable("cache", "clear", "--store", str(tmp_path / "store"))
        assert done.returncode == 0, done.stderr
        _python(tmp_path, "seed", MORE="7")  # a miss now: computed again, a new entry
        (tmp_path / "go-hit").touch()
        out, err = live.communicate(timeout=120)
    finally:
        live.kill()
    assert "failed: failed on purpose" in out, err
    assert _lines(tmp_path / "big") == 2  # the seed, and the new entry's computation
    resumed = _python(tmp_path, "run")
    assert resumed.stdout.split() == ["5001"], resumed.stderr
    assert _lines(tmp_path / "big") == 2, "the recorded step ran again"
