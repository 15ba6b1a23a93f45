"""What a newcomer meets first on the command line, run for real in child
processes: the advice of an error names only options the command has, bad
global options are usage errors, and every command says what it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable

from .clikit import ALL_STEPS, counts, runs_json, write_flow
from .clikit import durable as cli


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    return tmp_path


def test_a_missing_run_is_advised_only_with_the_commands_own_options(tmp: Path) -> None:
    # `show r1 -w approval` said "run it without --resume to start it": show
    # has no --resume. Only `durable run` may advise it.
    done = cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    for command in (["show", "r1"], ["fork", "r1", "--at", "1"], ["cancel", "r1"], ["rm", "r1"]):
        refused = cli(tmp, *command, "-w", "approval")
        assert refused.returncode == 2, refused.stderr
        assert "no run 'r1' of workflow 'approval'" in refused.stderr
        assert "--resume" not in refused.stderr and "resume()" not in refused.stderr
        assert "`durable runs approval` lists them" in refused.stderr
    resumed = cli(tmp, "run", "flow.py:approval", "--run-id", "r9", "--resume")
    assert resumed.returncode == 2
    assert "run it without --resume to start it" in resumed.stderr
    assert counts(tmp) == ALL_STEPS  # nothing ran again, nothing else ran
    assert [r["runId"] for r in runs_json(tmp)] == ["r1"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_an_empty_store_is_a_usage_error_not_an_empty_listing(tmp: Path, where: str) -> None:
    # `--store ""` printed "no runs in " and exit 0: the working folder was
    # taken for the store. It is bad input, said before anything is opened.
    done = cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    for command in (["runs"], ["show", "r1"], ["rm", "r1"],
                    ["run", "flow.py:pipeline", "--run-id", "r1", "--restart"]):  # fmt: skip
        given = ["--store", ""]
        refused = cli(tmp, *(given + command if where == "before" else command + given))
        assert refused.returncode == 2, refused.stderr
        assert "the store URL is empty" in refused.stderr, refused.stderr
        assert "usage: durable" in refused.stderr and "no runs in" not in refused.stderr
    assert counts(tmp) == ALL_STEPS  # the run was neither removed nor run again
    assert [r["runId"] for r in runs_json(tmp)] == ["r1"]


def test_open_store_refuses_an_empty_url(tmp: Path) -> None:
    for url in ("", "  "):
        with pytest.raises(durable.ConfigurationError, match="store is empty"):
            durable.open_store(url)
