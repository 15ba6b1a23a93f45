"""What a newcomer meets first on the command line, run for real in child
processes: the advice of an error names only options the command has, bad
global options are usage errors, and every command says what it accepts."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _arguments(parser: argparse.ArgumentParser, path: str = "durable") -> Iterator[tuple[str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _arguments(sub, f"{path} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_argument_of_every_command_says_what_it_is() -> None:
    # `durable show --help` listed `RUN` and `--workflow WORKFLOW, -w WORKFLOW`
    # with nothing after them; `run` its TARGET and --run-id likewise.
    from durable._cli.main import build_parser

    silent = [f"{path}: {a.option_strings or a.metavar or a.dest}"
              for path, a in _arguments(build_parser()) if not a.help]  # fmt: skip
    assert silent == []


def test_the_examples_of_durable_help_work(tmp: Path) -> None:
    from durable._cli.main import EPILOG, build_parser

    shown = cli(tmp, "--help")
    assert shown.returncode == 0 and "examples:" in shown.stdout and "exit codes:" in shown.stdout
    examples = [line.split("  ")[1].strip() for line in EPILOG.splitlines()
                if line.startswith("  durable ")]  # fmt: skip
    assert len(examples) == 5
    for example in examples:  # each is a command line the parser accepts
        build_parser().parse_args(shlex.split(example)[1:])
    first = shlex.split(examples[0])
    assert first == ["durable", "run", "flow.py:pipeline", "--var", "n=5"]
    done = cli(tmp, *first[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(((5 + 1) * 2 + 10) * 3 - 1)
    listed = cli(tmp, "runs")
    assert listed.returncode == 0 and "flow.pipeline" in listed.stdout
    assert counts(tmp) == ALL_STEPS


CACHED = '''
import durable

@durable.step(cache=True)
def fetch(n: int) -> int:
    return n * 2

@durable.workflow
def flow(n: int) -> int:
    return fetch(n)
'''


def test_a_step_name_without_cache_entries_names_those_with_some(tmp: Path) -> None:
    """Before: `durable cache clear fetchh` said "removed 0 entries" and
    exited 0, with no hint that the name was wrong."""
    write_flow(tmp, CACHED, "cached.py")
    assert cli(tmp, "run", "cached.py:flow", "--var", "n=1").returncode == 0
    cleared = cli(tmp, "cache", "clear", "fetchh")
    assert cleared.returncode == 0, cleared.stderr
    assert "no cache entries for step fetchh; steps with entries: fetch" in cleared.stderr
    listed = cli(tmp, "cache", "ls", "fetchh")
    assert "steps with entries: fetch" in listed.stderr
    assert "1 entry" in cli(tmp, "cache", "ls").stderr  # nothing was removed
