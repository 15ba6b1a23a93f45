"""The fourth new-user walk on the command line, run for real in child
processes: what `durable run --wait` says while it waits, and one exit code
for a name that matches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from .clikit import ALL_STEPS, counts, held_and_waiting, read_until, write_flow
from .clikit import durable as cli

pytestmark = pytest.mark.slow


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    return tmp_path


@pytest.mark.parametrize("store", [(), ("--store", "team runs")])
def test_run_wait_says_once_whom_it_waits_for(tmp: Path, store: tuple[str, ...]) -> None:
    """Before: `durable run --wait 60` on a held run printed nothing until
    the holder let go, which looked like a hang. Given --store, the line
    said `durable show held`, which looked in $DURABLE_STORE: no run."""
    holder, waiter = held_and_waiting(tmp, "60", *store)
    try:
        said = read_until(waiter.stderr, "stops waiting")
        assert holder.stdin is not None
        holder.stdin.write(b"go\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
        assert waiter.wait(timeout=60) == 0
    finally:
        for child in (holder, waiter):
            child.kill()
            child.wait()
    assert f"run held of flow.pipeline is being executed by pid {holder.pid} on " in said
    assert "waiting up to 60s for it to end or stop" in said
    show = " ".join(["durable", *(f"'{a}'" if " " in a else a for a in store), "show held"])
    assert f"`{show}` shows where it is; Ctrl-C stops waiting" in said
    assert waiter.stderr is not None
    rest = said + waiter.stderr.read().decode()
    assert rest.count("is being executed by") == 1  # once, not at every poll
    assert counts(tmp) == ALL_STEPS  # the waiter executed nothing


def test_a_name_that_matches_nothing_exits_2_in_every_command(tmp: Path) -> None:
    """Before: `durable runs pipelin` and `durable cache ls fetchh` exited 0,
    as for an empty listing, where `show`, `rm`, `cancel` and `fork` of a
    run id that matches nothing exit 2: a script could not tell a typo."""
    assert cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    for command in (["runs", "pipelin"], ["runs", "pipelin", "--json"],
                    ["runs", "pipelin", "--status", "failed"], ["show", "r9"], ["rm", "r9"],
                    ["cancel", "r9"], ["fork", "r9", "--at", "0"], ["cache", "ls", "fetch"],
                    ["cache", "ls", "fetch", "--json"], ["cache", "clear", "fetch"],
                    ["show", "r1", "--workflow", "pipeline"]):  # fmt: skip
        done = cli(tmp, *command)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith("durable: no "), (command, done.stderr)
    named = cli(tmp, "show", "r1", "--workflow", "pipeline").stderr
    assert "that workflow has no runs there; did you mean flow.pipeline?" in named, named
    # Filters that match nothing, and listings without a name, are not errors.
    for command in (["runs"], ["runs", "flow.pipeline", "--status", "failed"], ["cache", "ls"],
                    ["gc", "--status", "failed"], ["cache", "prune", "--older-than", "7d"]):  # fmt: skip
        done = cli(tmp, *command)
        assert done.returncode == 0, (command, done.stderr)
    assert counts(tmp) == ALL_STEPS
