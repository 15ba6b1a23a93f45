"""A command a message advises is typed as printed: each run id, workflow
name and new id in it is one word of the shell (shlex-quoted where it needs
it). `durable fork it's;v2 --at 0` left a quote open."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

import durable

from .clikit import durable as durable_cli
from .clikit import write_flow

ODD = "it's;v2"  # a quote and a command separator: run ids hold no whitespace or glob characters


def test_the_fork_a_second_answer_advises_quotes_the_run_id(store: durable.Store) -> None:
    @durable.workflow(store=store, run_id=ODD)
    def two_questions() -> str:
        return durable.wait_for("first") + durable.wait_for("second")

    with pytest.raises(durable.Suspended):
        two_questions()
    with pytest.raises(durable.Suspended):
        two_questions.resume(ODD, inputs={"first": "a"})
    with pytest.raises(durable.ConfigurationError) as refused:
        two_questions.resume(ODD, inputs={"first": "b"})
    assert f"(durable fork {shlex.quote(ODD)} --at 0)" in str(refused.value)


def test_the_rm_a_taken_fork_id_advises_quotes_both_names(store: durable.Store) -> None:
    @durable.workflow(store=store, name="flow(v2)")
    def flow() -> int:
        return 1

    flow.with_options(run_id="a")()
    flow.with_options(run_id=ODD)()
    with pytest.raises(durable.ConfigurationError) as taken:
        flow.fork("a", at=0, new_run_id=ODD)
    assert f"(durable rm {shlex.quote(ODD)} --workflow 'flow(v2)')" in str(taken.value)


def test_the_show_a_run_of_another_workflow_advises_quotes_the_run_id(
    store: durable.Store,
) -> None:
    @durable.workflow(store=store, name="first")
    def first() -> int:
        return 1

    @durable.workflow(store=store, name="second")
    def second() -> int:
        return 2

    first.with_options(run_id=ODD)()
    with pytest.raises(durable.RunNotFoundError) as missing:
        second.resume(ODD)
    assert f"`durable show {shlex.quote(ODD)}`" in str(missing.value)


def test_the_cli_fork_advises_a_run_of_the_new_id_quoted(tmp_path: Path) -> None:
    write_flow(tmp_path)
    assert durable_cli(tmp_path, "run", "flow.py:pipeline", "--run-id", "g1", "--var", "n=1").returncode == 0
    forked = durable_cli(tmp_path, "fork", "g1", "--at", "1", "--new-run-id", ODD)
    assert forked.returncode == 0, forked.stderr
    assert f"--run-id {shlex.quote(ODD)} --resume" in forked.stderr
