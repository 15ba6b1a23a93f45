"""`durable` edge cases found in review, each run for real in a child process:
how a script is loaded, which errors are refusals (exit 2) and which are
failures (exit 1), what stdout and `show` print, and stores holding a run
whose manifest cannot be verified."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import durable
from durable.testing import fake_clock

from .clikit import child_env, counts, report_lines, runs_json, write_flow
from .clikit import durable as cli

EDGES = """
import math
import os
from pathlib import Path

import durable

HERE = Path(__file__).parent


def note(name):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\\n")


def helper(x: int) -> int:
    return x


@durable.workflow
def annotations() -> str:
    return repr(helper.__annotations__)


@durable.workflow
def odd_floats() -> list:
    return [1.5, math.nan, -math.inf]


@durable.workflow
def echo(x):
    return [x, type(x).__name__]


@durable.step
def first(n):
    note("first"); return n + 1


@durable.workflow
def misconfigured(n: int) -> int:
    n = first(n)
    durable.workflow(keep_last=0)(lambda: 0)  # a ConfigurationError, raised by the body
    return n


@durable.step
def shout(text):
    note("shout"); return text.upper()


@durable.step
def whisper(text):
    note("whisper"); return text.lower()


@durable.workflow
def from_file(decision: str | None = None) -> str:
    # Reads outside any step: the tests change the file to make the body
    # call a step with other arguments, or another step.
    text = (HERE / "input.txt").read_text()
    out = whisper(text) if text.startswith("quiet") else shout(text)
    if decision is None:
        durable.suspend("waiting for decision")
    return out + decision


@durable.step(artifacts_policy="refuse")
def build(name):
    note("build")
    path = HERE / name
    path.write_text("binary")
    return str(durable.artifact(path))


@durable.workflow
def release(decision: str | None = None) -> str:
    path = build("app.bin")
    if decision is None:
        durable.suspend("waiting for decision")
    return f"{path}: {decision}"


@durable.step
def explode(x):
    note("explode")
    raise ValueError(f"bad input {x}\\nsecond line of the message\\nthird line")


@durable.workflow
def broken(x: int) -> int:
    return explode(first(x))
"""


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path, EDGES, "edges.py")
    (tmp_path / "input.txt").write_text("hello")
    return tmp_path


def test_a_loaded_script_keeps_real_annotations(tmp: Path) -> None:
    # `durable run` compiles the script itself; its own `from __future__
    # import annotations` must not turn the script's annotations into strings.
    done = cli(tmp, "run", "edges.py:annotations")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == "{'x': <class 'int'>, 'return': <class 'int'>}"


def test_stdout_is_strict_json_and_non_finite_values_print_as_repr(tmp: Path) -> None:
    done = cli(tmp, "run", "edges.py:odd_floats")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1.5, nan, -inf]"  # not the non-JSON NaN / -Infinity
    ok = cli(tmp, "run", "edges.py:echo", "--var", "x=[1.5, 2]")
    assert json.loads(ok.stdout) == [[1.5, 2], "list"]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_vars_stay_strings(tmp: Path, text: str) -> None:
    done = cli(tmp, "run", "edges.py:echo", "--var", f"x={text}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [text, "str"]


def test_a_configuration_error_raised_by_the_body_is_a_failure(tmp: Path) -> None:
    done = cli(tmp, "run", "edges.py:misconfigured", "--run-id", "m1", "--var", "n=1")
    assert done.returncode == 1, done.stderr
    lines = report_lines(done.stderr)
    assert "run m1 failed" in lines[0] and "ConfigurationError: keep_last must be" in lines[0]
    advice = "fix the cause, then: durable run edges.py:misconfigured --run-id m1 --resume"
    assert lines[1].strip().startswith("raised at edges.py, line ")  # newuser45
    assert lines[2].strip().startswith(advice) and "--resume --on-change rerun" in lines[2]
    assert "Traceback" not in done.stderr
    assert runs_json(tmp)[0]["status"] == "failed"
    again = cli(tmp, "run", "edges.py:misconfigured", "--run-id", "m1", "--resume")
    assert again.returncode == 1
    assert counts(tmp) == {"first": 1}  # replayed on the second try


def test_a_record_that_no_longer_matches_its_call_is_refused_by_position(tmp: Path) -> None:
    assert cli(tmp, "run", "edges.py:from_file", "--run-id", "f1").returncode == 3
    (tmp / "input.txt").write_text("goodbye")  # same definition, other arguments
    refused = cli(tmp, "run", "edges.py:from_file", "--run-id", "f1", "--var", "decision=!")
    assert refused.returncode == 2, refused.stderr
    lines = report_lines(refused.stderr)
    assert len(lines) == 5 and "Traceback" not in refused.stderr
    assert "the record at position 0 no longer matches the call" in lines[0]
    assert "arguments changed" in lines[0] and "recorded with definition" not in lines[0]
    assert lines[1].endswith("--run-id f1 --resume --on-change rerun --var 'decision=!'")
    assert counts(tmp) == {"shout": 1}
    assert runs_json(tmp)[0]["status"] == "suspended"  # a refusal leaves the run as it was
    rerun = cli(tmp, "run", "edges.py:from_file", "--run-id", "f1", "--on-change", "rerun",
                "--var", "decision=!")  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout) == "GOODBYE!"
    assert counts(tmp) == {"shout": 2}


def test_a_step_called_out_of_order_is_a_refusal(tmp: Path) -> None:
    assert cli(tmp, "run", "edges.py:from_file", "--run-id", "n1").returncode == 3
    (tmp / "input.txt").write_text("quiet please")  # the body now calls whisper first
    refused = cli(tmp, "run", "edges.py:from_file", "--run-id", "n1", "--var", "decision=!")
    assert refused.returncode == 2, refused.stderr
    assert "called step" in refused.stderr and "Traceback" not in refused.stderr
    assert counts(tmp) == {"shout": 1}
    assert runs_json(tmp)[0]["status"] == "suspended"


def test_a_missing_artifact_under_refuse_exits_2_with_the_restart_hint(tmp: Path) -> None:
    assert cli(tmp, "run", "edges.py:release", "--run-id", "r1").returncode == 3
    (tmp / "app.bin").unlink()
    refused = cli(tmp, "run", "edges.py:release", "--run-id", "r1", "--var", "decision=ship")
    assert refused.returncode == 2, refused.stderr
    lines = report_lines(refused.stderr)
    assert len(lines) == 3 and "Traceback" not in refused.stderr
    assert lines[0].startswith("durable: refused: run r1") and "app.bin" in lines[0]
    assert "missing" in lines[0] and "artifacts_policy='refuse'" in lines[0]
    assert lines[2].endswith("--run-id r1 --restart --var 'decision=\"ship\"'")
    assert "restart=True" not in refused.stderr
    assert counts(tmp) == {"build": 1}  # not run again
    restarted = cli(tmp, "run", "edges.py:release", "--run-id", "r1", "--restart",
                    "--var", "decision=ship")  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr
    assert counts(tmp) == {"build": 2}


def test_show_keeps_one_line_per_step_for_a_multi_line_error(tmp: Path) -> None:
    assert cli(tmp, "run", "edges.py:broken", "--run-id", "b1", "--var", "x=1").returncode == 1
    text = cli(tmp, "show", "b1")
    assert text.returncode == 0, text.stderr
    assert "second line" not in text.stdout and "third line" not in text.stdout
    rows = [line for line in text.stdout.splitlines() if line[:1].isdigit()]
    assert [r.split()[:4] for r in rows] == [
        ["0", "step", "first", "completed"], ["1", "step", "explode", "failed"],
    ]  # fmt: skip
    assert rows[1].endswith("ValueError: bad input 2")


def _two_runs(store: durable.Store) -> None:
    flow = durable.workflow(name="signed", store=store)(_double)
    with fake_clock(start=time.time() - 30 * 86400):
        flow.with_options(run_id="good")(1)
        flow.with_options(run_id="planted")(2)


def _double(n: int) -> int:
    return n * 2


def test_runs_and_gc_go_on_past_an_unsigned_manifest_in_a_signed_store(tmp: Path) -> None:
    store = durable.open_store(tmp / "store", signing_key="k")
    _two_runs(store)
    # Rewrite one manifest without the signature (someone without the key).
    manifest = tmp / "store" / "signed" / "planted" / "run"
    manifest.write_bytes(_bare_manifest(store, "planted"))
    env = child_env(tmp, DURABLE_SIGNING_KEY="k")
    listed = {r["runId"]: r for r in runs_json(tmp, env=env)}
    assert listed["good"]["status"] == "completed"
    assert (
        listed["planted"]["status"] == "unverified" and "not signed" in listed["planted"]["error"]
    )
    # Its age is unknown: an age-based gc leaves it, naming its status removes it.
    aged = cli(tmp, "gc", "--older-than", "7d", env=env)
    assert aged.returncode == 0, aged.stderr
    assert [r["runId"] for r in runs_json(tmp, env=env)] == ["planted"]
    named = cli(tmp, "gc", "--status", "unverified", env=env)
    assert named.returncode == 0 and "removed 1 run" in named.stderr
    assert runs_json(tmp, env=env) == []


def _bare_manifest(store: durable.Store, run_id: str) -> bytes:
    from durable._storage.manifest import pack_manifest, read_manifest

    manifest = read_manifest(store, "signed", run_id)
    assert manifest is not None
    return pack_manifest(manifest, None)  # as someone without the key would


def test_gc_filters_narrow_together_on_the_command_line(tmp: Path) -> None:
    store = durable.open_store(tmp / "store")
    flow = durable.workflow(name="aged", store=store)(_double)
    for days, rid in [(10, "d10"), (9, "d9"), (8, "d8"), (1, "d1"), (0, "d0")]:
        with fake_clock(start=time.time() - days * 86400 - 60):
            flow.with_options(run_id=rid)(1)
    dry = cli(tmp, "gc", "--keep-last", "1", "--older-than", "7d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would remove 3 runs" in dry.stderr  # d1 is beyond keep-last but young: kept
    assert {line.split()[1] for line in dry.stdout.splitlines()[1:]} == {"d10", "d9", "d8"}
    help_text = cli(tmp, "gc", "--help").stdout
    assert "keeps the 3 newest" in " ".join(help_text.split())


def test_a_run_removed_under_its_holder_stops_it_and_says_so(tmp: Path) -> None:
    # Its folder deleted while step 2 runs: the holder records nothing more,
    # executes no later step, and its message no longer claims another
    # process continues the run (there is none).
    import shutil

    from .clikit import read_until, spawn

    write_flow(tmp)
    env = child_env(tmp, FLOW_BLOCK_AT="2")
    child = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "gone", "--var", "n=1", env=env)
    try:
        read_until(child.stdout, "step 2 started")
        shutil.rmtree(tmp / "store" / "flow.pipeline" / "gone")
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 2
    finally:
        child.kill()
        child.wait()
    assert child.stderr is not None
    said = child.stderr.read().decode()
    assert "lost its lease" in said and "If the run was removed" in said
    assert counts(tmp) == {"s1": 1, "s2": 1}
    assert runs_json(tmp) == []  # nothing was written back into the removed run


def test_commands_without_wait_do_not_advise_it_for_a_held_run(tmp: Path) -> None:
    # Only `durable run` has --wait: rm, fork and cancel of a held run said
    # "run again with --wait SECONDS", an option they then refuse.
    from .clikit import read_until, spawn

    write_flow(tmp)
    env = child_env(tmp, FLOW_BLOCK_AT="2")
    child = spawn(tmp, "run", "flow.py:pipeline", "--run-id", "held", "--var", "n=1", env=env)
    try:
        read_until(child.stdout, "step 2 started")
        removed = cli(tmp, "rm", "held")
        again = cli(tmp, "run", "flow.py:pipeline", "--run-id", "held", "--var", "n=1")
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0
    finally:
        child.kill()
        child.wait()
    assert removed.returncode == 2 and "being executed by" in removed.stderr
    assert "--wait" not in removed.stderr, removed.stderr
    assert "Wait for it to finish" in removed.stderr
    assert again.returncode == 2 and "run again with --wait SECONDS" in again.stderr
    assert counts(tmp) == {"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1}
