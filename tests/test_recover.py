"""`wf.recover()` / `durable recover`: every interrupted or failed run whose
holder is gone is resumed, oldest first, each reported; a run held by a live
process is skipped and reported; completed and cancelled runs are left."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import durable

from .clikit import PIPELINE_RESULT, child_env, counts, read_until, spawn, write_flow
from .clikit import durable as durable_cli


def test_recover_resumes_each_run_whose_holder_is_gone(local_store: durable.Store) -> None:
    ran: Counter[str] = Counter()
    broken = {"fixed", "interrupt", "again", "held"}

    @durable.step
    def prepare(key: str) -> str:
        ran[f"prepare {key}"] += 1
        return key

    @durable.step
    def finish(key: str) -> str:
        ran[f"finish {key}"] += 1
        if key == "interrupt" and key in broken:
            raise KeyboardInterrupt  # the process was stopped mid-step
        if key in broken:
            raise RuntimeError(f"{key} is down")
        return key.upper()

    @durable.workflow(store=local_store, run_id=lambda key: key)
    def flow(key: str) -> str:
        return finish(prepare(key))

    for key in ("fixed", "interrupt", "again", "held"):
        with pytest.raises((RuntimeError, KeyboardInterrupt)):
            flow(key)
    assert flow("done") == "DONE"
    statuses = {i.run_id: i.status for i in flow.runs()}
    assert statuses == {"fixed": "failed", "interrupt": "interrupted", "again": "failed",
                        "held": "failed", "done": "completed"}  # fmt: skip
    broken.clear()
    broken.add("again")  # this one still fails
    lease = local_store.acquire(flow.name, "held", 30.0)  # a live process holds it
    try:
        reports = {r.run_id: r for r in flow.recover()}
    finally:
        lease.release()
    assert set(reports) == {"fixed", "interrupt", "again", "held"}
    assert [reports[k].value for k in ("fixed", "interrupt")] == ["FIXED", "INTERRUPT"]
    assert (reports["fixed"].steps_replayed, reports["fixed"].steps_executed) == (1, 1)
    assert reports["again"].status == "failed"
    assert "again is down" in (reports["again"].error or "")
    assert reports["held"].status == "running" and "skipped" in (reports["held"].error or "")
    for key in ("fixed", "interrupt", "again", "held"):
        assert ran[f"prepare {key}"] == 1, key  # replayed, never re-run
    assert ran == Counter({
        "prepare fixed": 1, "finish fixed": 2, "prepare interrupt": 1, "finish interrupt": 2,
        "prepare again": 1, "finish again": 2, "prepare held": 1, "finish held": 1,
        "prepare done": 1, "finish done": 1,
    })  # fmt: skip
    # once its holder is gone, the skipped run is recovered too
    broken.clear()
    assert sorted((r.run_id, r.status) for r in flow.recover()) == [
        ("again", "completed"), ("held", "completed"),
    ]  # fmt: skip
    assert flow.recover() == []
    assert ran["finish held"] == 2 and ran["finish again"] == 3


@pytest.mark.slow
def test_durable_recover_after_kill_9(tmp_path: Path) -> None:
    write_flow(tmp_path)
    env = child_env(tmp_path)
    child = spawn(tmp_path, "run", "flow.py:pipeline", "--run-id", "k9", "--var", "n=1",
                  env=dict(env, FLOW_BLOCK_AT="3"))  # fmt: skip
    try:
        read_until(child.stdout, "step 3 started")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert counts(tmp_path) == {"s1": 1, "s2": 1, "s3": 1}
    done = durable_cli(tmp_path, "recover", "flow.py:pipeline", "--json", env=env)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    assert report == {"runId": "k9", "status": "completed", "error": None,
                      "stepsReplayed": 2, "stepsExecuted": 3}  # fmt: skip
    assert counts(tmp_path) == {"s1": 1, "s2": 1, "s3": 2, "s4": 1, "s5": 1}
    again = durable_cli(tmp_path, "recover", "flow.py:pipeline", env=env)
    assert again.returncode == 0 and "no interrupted or failed run" in again.stderr
    shown = durable_cli(
        tmp_path, "run", "flow.py:pipeline", "--run-id", "k9", "--var", "n=1", env=env
    )
    assert shown.stdout.strip() == str(PIPELINE_RESULT)


REFUSED_FLOW = """
import os
from pathlib import Path

import durable


@durable.step
def work(n: int) -> int:
    with Path(os.environ["FLOW_COUNTS"]).open("a") as f:
        f.write("work\\n")
    if os.environ.get("FLOW_STOP"):
        raise KeyboardInterrupt  # the job was stopped mid-step
    return n + 1


@durable.step
def prep(n: int) -> int:
    return n


@durable.workflow(run_id="r1")
def job(n: int = 1) -> int:
    return work(prep(n))  # prep recorded: the run is its code's (one that recorded nothing is not)
"""


def test_durable_recover_exits_2_when_a_run_is_refused_as_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An interrupted run whose code changed was refused (nothing executed,
    # the run still interrupted) and `durable recover` exited 0: a CI job
    # went green with the run left where it was.
    from durable._cli.main import main

    counts = tmp_path / "counts.txt"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # `recover` adds the working folder
    monkeypatch.setenv("FLOW_COUNTS", str(counts))
    (tmp_path / "flow.py").write_text(REFUSED_FLOW)
    store = ["--store", str(tmp_path / "store")]
    monkeypatch.setenv("FLOW_STOP", "1")
    assert main(["run", "flow.py:job", *store]) == 130
    monkeypatch.delenv("FLOW_STOP")
    (tmp_path / "flow.py").write_text(REFUSED_FLOW.replace("n + 1", "n + 2"))
    capsys.readouterr()
    assert main(["recover", "flow.py:job", "--json", *store]) == 2
    (report,) = json.loads(capsys.readouterr().out)
    assert (report["runId"], report["status"]) == ("r1", "interrupted")
    assert report["error"].startswith("DefinitionChangedError: ")
    assert main(["recover", "flow.py:job", *store]) == 2
    err = capsys.readouterr().err
    assert "run r1: refused" in err and "--on-change rerun" in err
    assert "with_options(" not in err  # the command's flags, not the Python options
    assert counts.read_text() == "work\n"  # refused: nothing executed
