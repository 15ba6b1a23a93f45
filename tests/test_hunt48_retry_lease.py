"""A step's holder stopped (SIGSTOP) in the delay between two tries of a
step with `retries=`, on S3, past its lease: another machine takes the run
over, makes the try left and completes the run. Continued, the first holder
made its next try (the step's body executed by a process that no longer
held the run: an execution no budget allowed) and only then, at its
record, raised `LeaseLostError`. A retry is a boundary now, as it is for a
`loop_over` item (`_fanout.tries`): the lease is checked before the try
starts, and the stopped holder raises without executing the step again."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

import durable
from tests import forkcli
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # moto and two processes

SCRIPT = """
import os, socket, sys

socket.gethostname = lambda: os.environ["HOST"]  # this "machine"

import durable

def told(event):
    if isinstance(event, durable.events.StepRetried):
        print("PAUSING", flush=True)  # its failure recorded, the delay begins

durable.on_event(told)

def count(what):
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{os.environ['HOST']}:{what}\\n")

@durable.step
def work(i: int) -> int:
    count(i)
    return i + 100

@durable.step(retries=2, retry_delay=10.0)
def flaky() -> int:
    count("flaky")
    if os.environ["HOST"] == "machine-a":
        raise OSError("the service is down")
    return 7

@durable.workflow
def nightly() -> list:
    return [work(0), flaky(), work(2)]

try:
    wait = float(os.environ["WAIT"]) if "WAIT" in os.environ else None  # B waits out A's lease
    store = durable.open_store(lease_ttl=3)
    run = nightly.with_options(store=store, run_id="tries", wait=wait).run()
except durable.RunLockedError as e:
    print("LOCKED", e, flush=True)
else:
    print("DONE", run.value, flush=True)
"""


def test_a_holder_stopped_between_tries_makes_no_try_once_taken_over(
    tmp_path: Path, s3_url: str, s3_env: dict[str, str]
) -> None:
    script, log = tmp_path / "nightly.py", tmp_path / "executions.log"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DURABLE_"))}
    env.update(s3_env, PYTHONPATH=str(ROOT), DURABLE_STORE=s3_url, COUNT_LOG=str(log))
    a = forkcli.popen([str(script)], tmp_path, dict(env, HOST="machine-a"))
    assert a.stdout is not None
    try:
        assert a.stdout.readline().strip() == "PAUSING"  # try 0 failed, recorded
        os.kill(a.pid, signal.SIGSTOP)  # in the 10 s delay before try 1
        b = forkcli.call([str(script)], tmp_path, dict(env, HOST="machine-b", WAIT="60"))
        assert b.stdout.split() == ["DONE", "[100,", "7,", "102]"], b.stdout + b.stderr
        os.kill(a.pid, signal.SIGCONT)
        said = a.stdout.read()
        assert a.wait() == 0
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert said.startswith("LOCKED") and "lost" in said.lower(), said
    # Was: machine-a:flaky twice, its second try made after B had taken the run.
    assert log.read_text().split() == [
        "machine-a:0", "machine-a:flaky", "machine-b:flaky", "machine-b:2"
    ]  # fmt: skip



tried: list[str] = []


@durable.step(retries=2, retry_delay=0.0)
def fails_first() -> int:
    tried.append("sync")
    if len(tried) == 1:
        raise OSError("the service is down")
    return 7


@durable.step(retries=2, retry_delay=0.0)
async def afails_first() -> int:
    tried.append("async")
    if len(tried) == 1:
        raise OSError("the service is down")
    return 7


@durable.workflow(name="tries", run_id="t")
def tries() -> int:
    return fails_first()


@durable.workflow(name="atries", run_id="t")
async def atries() -> int:
    return await afails_first()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_retry_after_the_lease_is_lost_is_not_made(tmp_path: Path, kind: str) -> None:
    """The same in one process on a local folder: the run's lease file
    removed by hand once the first try's failure is recorded, before the
    second try (before, that try ran, and the holder raised only at its
    record)."""
    tried.clear()
    store = durable.open_store(tmp_path)
    name = "tries" if kind == "sync" else "atries"

    def remove_lease(event: durable.events.Event) -> None:
        if isinstance(event, durable.events.StepRetried):
            os.unlink(tmp_path / name / "t" / "lease")

    with durable.on_event(remove_lease), pytest.raises(durable.LeaseLostError):
        if kind == "sync":
            tries.with_options(store=store)()
        else:
            asyncio.run(atries.with_options(store=store)())
    assert tried == [kind]
