"""A graceful stop (SIGTERM under `stop_on_signals`) asked inside a step,
and the second SIGTERM, which stops at once, arriving between the step's
body returning and its record being written, or just after the record
landed: a resume runs the step again in the first case (its record never
landed) and replays it in the second, each exactly once, on a local store
and on S3. (A guard: it held.)"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

from tests import forkcli
from tests.conftest import ROOT

SCRIPT = """
import os, signal
import durable

@durable.step
def work(i: int) -> str:
    with open(os.environ["COUNT_LOG"], "a") as f:
        f.write(f"{i}\\n")
    if i == 1 and os.environ.get("PHASE") == "stopped":
        os.kill(os.getpid(), signal.SIGTERM)  # the first: finish the step, then stop
    return f"{i} in {os.environ['PHASE']}"

@durable.workflow(name="stop43")
def stop43() -> list:
    return [work(i) for i in range(3)]

def second_signal(store, when):
    class Second(type(store)):
        def save_record(self, workflow, run_id, name, data):
            if name.endswith("00000001") and when == "before":
                os.kill(os.getpid(), signal.SIGTERM)
            out = super().save_record(workflow, run_id, name, data)
            if name.endswith("00000001") and when == "after":
                os.kill(os.getpid(), signal.SIGTERM)
            return out
    store.__class__ = Second
    return store

def main():
    for when in ("before", "after"):  # one run each
        os.environ["PHASE"] = "stopped"
        store = second_signal(durable.open_store(os.environ["STORE"]), when)
        try:
            with durable.stop_on_signals():
                stop43.with_options(store=store, run_id=when).run()
        except durable.Stopped as e:
            print("STOPPED", e.code, flush=True)
        os.environ["PHASE"] = "resumed"  # the same process, a store opened afresh
        store = durable.open_store(os.environ["STORE"])
        run = stop43.with_options(store=store, run_id=when).run()
        print("DONE", run.steps_replayed, run.steps_executed, *run.value, sep="|", flush=True)

main()
"""


EXPECTED = [
    # Before: step 1's record never landed, and it runs again, once.
    "STOPPED 143",
    "DONE|1|2|0 in stopped|1 in resumed|2 in resumed",
    # After: it landed, and is replayed.
    "STOPPED 143",
    "DONE|2|1|0 in stopped|1 in stopped|2 in resumed",
]
COUNTS = ["0", "1", "1", "2", "0", "1", "2"]  # the run stopped before its record, then after


@pytest.mark.slow
def test_on_s3(tmp_path: Path, s3_url: str, s3_env: dict[str, str]) -> None:
    script, log = tmp_path / "stop.py", tmp_path / "count.log"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COUNT_LOG=str(log), STORE=s3_url, **s3_env)
    done = forkcli.call([str(script)], tmp_path, env)
    assert done.stdout.splitlines() == EXPECTED, done.stderr
    assert log.read_text().split() == COUNTS


def test_on_a_local_store_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same script run here (the signals are real, sent to this process)."""
    script, log = tmp_path / "stop.py", tmp_path / "count.log"
    script.write_text(SCRIPT)
    monkeypatch.setenv("COUNT_LOG", str(log))
    monkeypatch.setenv("STORE", str(tmp_path / "store"))
    monkeypatch.setenv("PHASE", "")
    runpy.run_path(str(script), run_name="stop43_here")
    assert capsys.readouterr().out.splitlines() == EXPECTED
    assert log.read_text().split() == COUNTS
