"""A step with retries across calls of its run: the try number that
`durable.current_run().attempt` gives counts the tries of earlier calls, as
history and events do, and the idempotency key stays the same."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import durable
from durable._storage.keys import attempts_name
from durable._storage.records import StepRecord, seal_record, unseal
from tests.conftest import rewrite_record

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import durable

    LOG = sys.argv[1]

    @durable.step(retries=3, retry_delay=0, retry_on=(ConnectionError,))
    def charge(amount: int) -> str:
        run = durable.current_run()
        with open(LOG, "a") as f:
            f.write(f"{run.attempt} {run.idempotency_key()}\\n")
        if run.attempt == 1 and os.environ.get("CRASH") == "1":
            os._exit(9)  # killed during the second try: nothing is recorded for it
        if run.attempt < 2:
            raise ConnectionError("no answer")
        return f"charged {amount}"

    @durable.workflow(run_id="order-7")
    def checkout(amount: int) -> str:
        return charge(amount)

    print(checkout(30))
    """
)


def test_attempts_go_on_counting_after_a_crash(tmp_path: Path, child_env: dict[str, str]) -> None:
    script, log = tmp_path / "flow.py", tmp_path / "tries"
    script.write_text(SCRIPT)
    crashed = subprocess.run(
        [sys.executable, str(script), str(log)], env={**child_env, "CRASH": "1"}, cwd=tmp_path
    )
    assert crashed.returncode == 9
    done = subprocess.run(
        [sys.executable, str(script), str(log)], env=child_env, cwd=tmp_path,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "charged 30"
    # The first try failed and was recorded; the second was killed, so the
    # resume's first try is the second recorded one: 1, not 0 again.
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [n for n, _ in lines] == ["0", "1", "1", "2"]
    keys = {key for _, key in lines}  # one call: one key, its position's and its digest's
    assert len(keys) == 1 and keys.pop().startswith("order-7:0/")


def test_a_step_called_again_after_its_retries_ran_out_numbers_on(store: durable.Store) -> None:
    seen: list[int] = []

    @durable.step(retries=1, retry_delay=0)
    def flaky() -> int:
        run = durable.current_run()
        assert run is not None
        seen.append(run.attempt)
        if len(seen) < 3:
            raise ConnectionError(f"try {len(seen)}")
        return run.attempt

    @durable.workflow(store=store, run_id="r")
    def wf() -> int:
        return flaky()

    with pytest.raises(ConnectionError):
        wf()
    assert wf() == 2
    assert seen == [0, 1, 2]
    _initial, step = wf.history("r")
    assert step.attempts == 3  # what history counts is what the step saw


BUDGET = textwrap.dedent(
    """
    import os, signal, sys
    import durable

    LOG = sys.argv[1]

    @durable.step(retries=3, retry_delay=0, retry_on=(ConnectionError,))
    def charge(amount: int) -> str:
        attempt = durable.current_run().attempt
        with open(LOG, "a") as f:
            f.write(f"{attempt}\\n")
        if attempt == 1 and os.environ.get("CRASH") == "1":
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 during the second try
        if os.environ.get("UP") != "1":
            raise ConnectionError(f"no answer to try {attempt}")
        return f"charged {amount}"

    @durable.workflow(run_id="order-8")
    def checkout(amount: int) -> str:
        return charge(amount)

    print(checkout(30))
    """
)


def test_a_crash_does_not_refill_the_retry_budget(tmp_path: Path, child_env: dict[str, str]) -> None:
    """retries=3 is four tries for the call, across the run's processes: a
    resume after a crash makes the tries left, not four more. The killed try
    left no failure record and is not counted; the recorded failure is."""
    script, log = tmp_path / "flow.py", tmp_path / "tries"
    script.write_text(BUDGET)

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), str(log)], env={**child_env, **env}, cwd=tmp_path,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert run(CRASH="1").returncode == -9
    resumed = run()
    assert resumed.returncode == 1 and "ConnectionError: no answer to try 3" in resumed.stderr
    # Try 0 failed (recorded), try 1 was killed; the resume makes 1, 2, 3.
    assert log.read_text().split() == ["0", "1", "1", "2", "3"]
    # The call gave up: a later call of the run is a new decision, with a
    # budget of its own (the first of its four tries succeeds here).
    done = run(UP="1")
    assert done.returncode == 0 and done.stdout.strip() == "charged 30"
    assert log.read_text().split() == ["0", "1", "1", "2", "3", "4"]


@pytest.mark.parametrize("legacy", [False, True])
def test_a_stop_between_tries_keeps_the_budget_open(store: durable.Store, legacy: bool) -> None:
    """Stopped during the delay after try 0 of 2: the resume makes the one
    try left. An attempts record written before budgets were kept (no
    `given_up`) cannot tell, and counts as a call that gave up, as then."""
    seen: list[int] = []

    @durable.step(retries=1, retry_delay=0)
    def flaky() -> int:
        run = durable.current_run()
        assert run is not None
        seen.append(run.attempt)
        if not seen[1:]:
            durable.request_stop()  # e.g. SIGTERM under stop_on_signals()
        raise ConnectionError(f"try {run.attempt}")

    @durable.workflow(store=store, run_id="r")
    def wf() -> int:
        return flaky()

    try:
        with pytest.raises(durable.Stopped):
            wf()
    finally:
        durable.clear_stop()
    if legacy:
        run = (wf.name, "r")
        name = attempts_name(0)
        raw = store.load_records(*run)[name]
        body = unseal(raw, store.signing_key, run_id="r", position=0, name=name)
        rec = StepRecord.from_bytes(body)
        del rec.extra["given_up"]
        rewrite_record(store, run, name, seal_record(rec.to_bytes(), store.signing_key), None)
    with pytest.raises(ConnectionError, match="try 2" if legacy else "try 1"):
        wf()
    assert seen == ([0, 1, 2] if legacy else [0, 1])
