"""The wall clock jumping under the step cache's `expire=`: an entry's age
is its reader's clock minus the creation time its writer's clock stamped,
so an entry stamped in the reader's future (a writer whose clock ran ahead,
or a clock set back since) has no age that can be trusted: it is a miss,
never served past its expiry. Every test counts the step body's runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

import durable
from durable.testing import FakeClock
from tests.conftest import ROOT

CALLS: Counter[str] = Counter()
HOUR = 3600.0


@pytest.fixture(autouse=True)
def plain_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_STORE", f"memory://clock-{uuid.uuid4().hex}")
    CALLS.clear()


@durable.step(name="rate", cache=durable.Cache(expire=HOUR))
def rate(pair: str) -> float:
    CALLS["rate"] += 1
    return 1.0 + CALLS["rate"]


def test_an_entry_stamped_by_a_clock_ahead_expires_on_real_time(clock: FakeClock) -> None:
    real = clock.now
    clock.now = real + 2 * HOUR  # the writer's clock runs two hours ahead
    assert rate("EURUSD") == 2.0
    clock.now = real + 1.5 * HOUR  # a right clock, 90 minutes later: an entry 90 min old
    assert rate("EURUSD") == 3.0  # computed again, not served past its hour
    assert CALLS["rate"] == 2
    assert rate("EURUSD") == 3.0  # the fresh entry replaced it and is served
    assert CALLS["rate"] == 2


def test_a_clock_set_back_does_not_stretch_an_entrys_life(clock: FakeClock) -> None:
    rate("EURUSD")
    clock.now -= 24 * HOUR  # the clock set back a day, then 2 hours pass
    clock.now += 2 * HOUR
    rate("EURUSD")
    assert CALLS["rate"] == 2


def test_a_run_is_not_served_an_entry_from_the_future_either(clock: FakeClock) -> None:
    store = durable.open_store(f"memory://clock-run-{uuid.uuid4().hex}")

    @durable.workflow(store=store)
    def quote(pair: str) -> float:
        return rate(pair)

    real = clock.now
    clock.now = real + 2 * HOUR
    assert quote.with_options(run_id="ahead")("EURUSD") == 2.0
    clock.now = real + 1.5 * HOUR
    assert quote.with_options(run_id="right")("EURUSD") == 3.0
    assert CALLS["rate"] == 2


RACE = """
import json, os, sys, time

_real = time.time  # this "machine's" clock, SKEW seconds off
time.time = lambda: _real() + float(os.environ.get("SKEW", "0"))

import durable


@durable.step(cache=durable.Cache(expire=3600))
def stamp(x: int) -> list:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    print("STARTED", flush=True)
    sys.stdin.readline()  # a handshake: both are inside the body, both missed
    return [os.getpid(), x]


print(json.dumps(stamp(7)), flush=True)
"""


@pytest.mark.slow
def test_two_processes_missing_at_once_return_one_value_across_a_small_skew(
    tmp_path: Path,
) -> None:
    """The entry another process created while this one computed is not
    from the future, whatever its stamp says: it did not exist at this
    call's lookup. With expire=, a writer's clock a little ahead must not
    make the loser replace the winner's entry and return its own value."""
    script = tmp_path / "job.py"
    script.write_text(RACE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env.update(PYTHONPATH=str(ROOT), DURABLE_STORE=str(tmp_path / "store"))
    env.update(COUNT_LOG=str(tmp_path / "executions.log"))
    ahead, right = (
        subprocess.Popen(
            [sys.executable, str(script)],
            env=dict(env, SKEW=skew),
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for skew in ("30", "0")
    )
    for child in (ahead, right):
        assert child.stdout is not None and child.stdout.readline().strip() == "STARTED"
    first, _ = ahead.communicate("go\n", timeout=120)  # its entry is written first
    second, _ = right.communicate("go\n", timeout=120)
    assert (ahead.returncode, right.returncode) == (0, 0)
    assert json.loads(first) == json.loads(second) == [ahead.pid, 7]
    assert len((tmp_path / "executions.log").read_text().split()) == 2
