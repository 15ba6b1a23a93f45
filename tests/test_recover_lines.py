"""Each line `durable recover` prints, checked whole, and the command it
advises run as printed: what it found (a run completed, failed again,
refused as changed), what it did (steps replayed and executed, counted by
the steps themselves), and what to run next (`--resume` with `--on-change
rerun`, `--rebase-checkpoint` or `--restart`), then nothing left to recover."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .clikit import child_env

FLOW = """
import os
from pathlib import Path

import durable


def note(what: str) -> None:
    with Path(os.environ["FLOW_COUNTS"]).open("a") as f:
        f.write(what + "\\n")


@durable.step
def prepare(key: str) -> str:
    note(f"prepare {key}")
    return key


@durable.step
def finish(key: str) -> str:
    note(f"finish {key}")
    if key in os.environ.get("FLOW_FAIL", "").split(","):
        raise RuntimeError(f"{key} is down")
    return key.upper()


@durable.workflow(run_id=lambda key: key)
def job(key: str) -> str:
    return finish(prepare(key))
"""
DURABLE = [sys.executable, "-m", "durable"]  # what the advice then starts with
PROGRAM = shlex.join(DURABLE)


def call(tmp: Path, words: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(words, cwd=tmp, env=child_env(tmp, **env), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip


def recover(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return call(tmp, [*DURABLE, "recover", "flow.py:job"], **env)


def counts(tmp: Path) -> Counter[str]:
    return Counter((tmp / "counts.txt").read_text().splitlines())


def advised(stderr: str, run_id: str) -> list[str]:
    """The command the report of `run_id` says to resume it with, as words."""
    lines = stderr.splitlines()
    at = lines.index(next(line for line in lines if line.startswith(f"run {run_id}: refused")))
    head, _, rest = lines[at + 2].partition("resume it with: ")
    assert head == "  " and " and --on-change rerun (re-run from the first change)" in rest
    return shlex.split(rest.partition(" and ")[0])


@pytest.mark.slow
def test_each_line_of_recover_and_the_commands_it_advises(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    for key in "abcdef":
        failed = call(tmp_path, [*DURABLE, "run", "flow.py:job", "--var", f"key={key}"],
                      FLOW_FAIL="a,b,c,d,e,f")  # fmt: skip
        assert failed.returncode == 1, failed.stderr
    assert counts(tmp_path) == Counter({f"{s} {k}": 1 for s in ("prepare", "finish") for k in "abcdef"})

    # What it found and did: completed runs, with their steps; a run that failed again.
    first = recover(tmp_path, FLOW_FAIL="b,c,d,e,f")
    assert first.stdout == ""
    assert first.stderr.splitlines() == [
        'run a: completed (1 replayed, 1 executed): "A"',
        *(f"run {k}: failed: RuntimeError: {k} is down" for k in "bcdef"),
    ]
    assert first.returncode == 1  # a run failed again
    assert counts(tmp_path)["prepare a"] == 1 and counts(tmp_path)["finish a"] == 2

    # A changed step: refused, nothing executed, and what to run next.
    source = FLOW.replace("    return key\n", "    return key.strip()\n")  # prepare changed
    (tmp_path / "flow.py").write_text(source)
    before = counts(tmp_path)
    refused = recover(tmp_path)
    assert refused.returncode == 2 and counts(tmp_path) == before  # nothing executed
    lines = refused.stderr.splitlines()
    for key in "bcdef":
        at = lines.index(next(x for x in lines if x.startswith(f"run {key}: ")))
        assert lines[at].startswith(
            f"run {key}: refused, nothing executed, still failed: DefinitionChangedError: "
            f"run '{key}' of 'flow.job' was recorded with definition "
        ), lines[at]
        assert lines[at + 1].startswith("  - prepare: code changed: "), lines[at + 1]
        words = advised(refused.stderr, key)
        assert words == [*DURABLE, "run", "flow.py:job", "--run-id", key, "--resume"]
        assert lines[at + 2].endswith(
            "or --rebase-checkpoint (keep the old records); --restart starts it afresh "
            "with the --var arguments given"
        )
    assert len(lines) == 5 * 3

    # Each way out, run as printed: from the first change, both steps again;
    # keeping the old records, only the step that had none; afresh, both.
    ways = {"b": ["--on-change", "rerun"], "c": ["--rebase-checkpoint"],
            "d": ["--restart", "--var", "key=d"]}  # fmt: skip
    for key, flags in ways.items():
        done = call(tmp_path, [*advised(refused.stderr, key), *flags])
        assert (done.returncode, done.stdout.strip()) == (0, f'"{key.upper()}"'), done.stderr
    now = counts(tmp_path) - before
    assert now == Counter({"prepare b": 1, "finish b": 1, "finish c": 1,
                           "prepare d": 1, "finish d": 1})  # fmt: skip

    # The rest recovered with the choice given; then nothing left, said so.
    for key in "ef":
        rerun = call(tmp_path, [*advised(refused.stderr, key), "--on-change", "rerun"])
        assert rerun.returncode == 0, rerun.stderr
    empty = recover(tmp_path)
    assert (empty.returncode, empty.stdout) == (0, "")
    assert empty.stderr == f"durable: no interrupted or failed run of flow.job in {tmp_path / 'store'}\n"


@pytest.mark.slow
def test_recover_in_a_store_that_is_not_there_says_so_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    ran = call(tmp_path, [*DURABLE, "--store", "store", "run", "flow.py:job", "--var", "key=a"])
    assert ran.returncode == 0, ran.stderr
    missing = call(tmp_path, [*DURABLE, "--store", "stor", "recover", "flow.py:job"])
    assert (missing.returncode, missing.stdout) == (2, "")  # a typo, not an empty store
    assert missing.stderr.splitlines() == [
        "durable: no interrupted or failed run of flow.job in stor: there is no such folder "
        f"({tmp_path / 'stor'}: a relative path is read from the working folder); check the "
        "store's path (--store, store=, $DURABLE_STORE); store here holds runs: "
        "`durable --store store runs` lists them"
    ]
    listed = call(tmp_path, [*DURABLE, "--store", "store", "runs"])  # the command it names
    assert listed.returncode == 0 and "a" in listed.stdout.split(), listed.stdout
