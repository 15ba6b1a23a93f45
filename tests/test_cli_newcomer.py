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

from .clikit import ALL_STEPS, child_env, counts, runs_json, show_json, write_flow
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
        assert "that workflow has no runs there; workflows with runs: flow.pipeline" in refused.stderr
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
    assert cleared.returncode == 2, cleared.stderr  # a name that matches nothing
    assert "no cache entries for step fetchh in " in cleared.stderr
    assert "did you mean fetch? steps with entries: fetch" in cleared.stderr
    listed = cli(tmp, "cache", "ls", "fetchh")
    assert "steps with entries: fetch" in listed.stderr
    assert "1 entry" in cli(tmp, "cache", "ls").stderr  # nothing was removed


UNRECORDABLE = '''
import os
import threading

import durable


def note(name):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\\n")


class Point:
    def __init__(self, x):
        self.x = x


@durable.step
def first(n: int) -> int:
    note("first")
    return n + 1


@durable.step
def make_lock(n: int):
    note("make_lock")
    return threading.Lock()


@durable.step
def make_point(n: int):
    note("make_point")
    return Point(n)


@durable.workflow
def locked(n: int):
    return make_lock(first(n))


@durable.workflow
def pointed(n: int):
    return make_point(first(n))
'''


def test_a_step_whose_output_cannot_be_recorded_is_named_not_the_body(tmp: Path) -> None:
    """`durable run` said "failed at step 2 (the workflow body)" when the
    step at position 1 returned a lock: no record names it, the error does."""
    write_flow(tmp, UNRECORDABLE, "unrecordable.py")
    failed = cli(tmp, "run", "unrecordable.py:locked", "--run-id", "r1", "--var", "n=1")
    assert failed.returncode == 1, failed.stderr
    assert "run r1 failed at step 2 (position 1, make_lock): SerializationError" in failed.stderr
    assert "the workflow body" not in failed.stderr
    assert counts(tmp) == {"first": 1, "make_lock": 1}


def test_without_pickles_the_advice_is_not_to_return_what_cloudpickle_carries(tmp: Path) -> None:
    """Under --no-pickle the advice said "Return plain data (or something
    cloudpickle can carry)": exactly what that store refuses."""
    write_flow(tmp, UNRECORDABLE, "unrecordable.py")
    failed = cli(tmp, "run", "unrecordable.py:pointed", "--no-pickle", "--run-id", "p1",
                 "--var", "n=1")  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    assert "failed at step 2 (position 1, make_point)" in failed.stderr
    assert "cloudpickle" not in failed.stderr
    assert "allow_pickle=False" in failed.stderr
    shown = cli(tmp, "show", "p1")
    assert "cloudpickle" not in shown.stdout
    assert counts(tmp) == {"first": 1, "make_point": 1}
    resumed = cli(tmp, "run", "unrecordable.py:pointed", "--run-id", "p1", "--resume")
    assert resumed.returncode == 0, resumed.stderr  # pickles allowed: recorded, first replayed
    assert counts(tmp) == {"first": 1, "make_point": 2}


def test_a_pickled_output_under_no_pickle_says_why_it_is_not_shown(tmp: Path) -> None:
    """`durable --no-pickle show` previewed a pickled output as "not decoded
    here (IntegrityError)", as if the record were damaged."""
    write_flow(tmp, UNRECORDABLE, "unrecordable.py")
    done = cli(tmp, "run", "unrecordable.py:pointed", "--run-id", "p2", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    shown = cli(tmp, "--no-pickle", "show", "p2")
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "make_point" in line)
    assert "IntegrityError" not in row and "not loaded under allow_pickle=False (--no-pickle)" in row, row
    assert "IntegrityError" not in show_json(tmp, "p2", "--no-pickle")["steps"][1]["outputPreview"]


def test_a_script_that_fails_while_loading_says_where(tmp: Path) -> None:
    """A NameError at a script's top level printed "durable: name 'undefined'
    is not defined" and nothing else: not which file, line, or error."""
    write_flow(tmp, "import durable\n\nx = undefined\n", "broken.py")
    refused = cli(tmp, "run", "broken.py:wf")
    assert refused.returncode == 2, refused.stderr
    assert "cannot load broken.py: NameError: name 'undefined' is not defined" in refused.stderr
    assert "broken.py, line 3" in refused.stderr
    assert "--debug" in refused.stderr


def test_a_cancelled_run_is_shown_once_cancelled(tmp: Path) -> None:
    """`durable show` printed "status    cancelled (cancelled)"."""
    done = cli(tmp, "run", "flow.py:approval", "--run-id", "a1", "--var", "topic=x")
    assert done.returncode == 3, done.stderr
    assert cli(tmp, "cancel", "a1").returncode == 0
    shown = cli(tmp, "show", "a1")
    status = next(line for line in shown.stdout.splitlines() if line.startswith("status"))
    assert status.split() == ["status", "cancelled"], status
    # The timeline said "waiting: cancelled" of a run that waits for nothing.
    assert cli(tmp, "show", "a1", "--html", "a1.html").returncode == 0
    page = (tmp / "a1.html").read_text()
    assert "waiting: cancelled" not in page and "cancelled" in page


def test_a_misspelt_run_id_is_answered_with_the_ids_it_resembles(tmp: Path) -> None:
    """`durable show nightly-2026-12-10` said only "no run ... `durable runs`
    lists its runs", when nightly-2026-12-01 was there."""
    done = cli(tmp, "run", "flow.py:pipeline", "--run-id", "nightly-2026-12-01", "--var", "n=1")
    assert done.returncode == 0, done.stderr
    for command in (["show"], ["rm"], ["cancel"], ["fork", "--at", "1"]):
        refused = cli(tmp, *command, "nightly-2026-12-10")
        assert refused.returncode == 2, refused.stderr
        assert "no run 'nightly-2026-12-10'" in refused.stderr
        assert "did you mean nightly-2026-12-01?" in refused.stderr, refused.stderr
    far = cli(tmp, "show", "zzz")
    assert far.returncode == 2 and "did you mean" not in far.stderr
    assert [r["runId"] for r in runs_json(tmp)] == ["nightly-2026-12-01"]  # nothing removed
    assert counts(tmp) == ALL_STEPS


def test_an_empty_listing_says_why(tmp: Path) -> None:
    """`durable runs pipeline` (the workflow is flow.pipeline) and `durable
    --store typo runs` both said "no runs in ...", as for an empty store."""
    assert cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    named = cli(tmp, "runs", "pipeline")
    assert named.returncode == 2, named.stderr  # a name that matches nothing
    assert "no runs of workflow 'pipeline'" in named.stderr
    assert "did you mean flow.pipeline? workflows with runs: flow.pipeline" in named.stderr
    missing = cli(tmp, "--store", "stroe", "runs")
    assert missing.returncode == 2, missing.stderr  # a typo, not an empty store
    assert "no runs in stroe: there is no such folder" in missing.stderr
    assert not (tmp / "stroe").exists()  # looking created nothing
    filtered = cli(tmp, "runs", "--status", "failed")
    assert "no failed runs" in filtered.stderr


def test_a_target_that_is_not_a_workflow_names_the_workflows_there(tmp: Path) -> None:
    """`durable run flow.py:pipelin` said "pipelin in flow.py is nothing, not a
    @durable.workflow"; `flow.py:s1` said "s1 in flow.py is function"."""
    missing = cli(tmp, "run", "flow.py:pipelin")
    assert missing.returncode == 2
    assert "flow.py has no pipelin; did you mean pipeline? its workflows: approval, broken, napping, pipeline" in missing.stderr
    step = cli(tmp, "run", "flow.py:s1", "--var", "n=1")
    assert step.returncode == 2
    assert "s1 in flow.py is a @durable.step, not a @durable.workflow" in step.stderr
    assert "its workflows: approval, broken, napping, pipeline" in step.stderr
    assert counts(tmp) == {}  # nothing ran


LOOP = '''
import os

import durable


def square(x):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(f"item{x}\\n")
    if x == 3 and not os.environ.get("FIXED"):
        raise ValueError("three is bad")
    return x * x


@durable.workflow
def squares(n: int):
    return durable.loop_over(square, range(n), checkpoint_items=True)
'''


def test_a_failed_block_shows_the_items_a_resume_keeps(tmp: Path) -> None:
    """A checkpointed block that failed on one item showed only the error:
    not that its first 3 items were kept and will not run again."""
    write_flow(tmp, LOOP, "loop.py")
    failed = cli(tmp, "run", "loop.py:squares", "--run-id", "l1", "--var", "n=5")
    assert failed.returncode == 1, failed.stderr
    shown = cli(tmp, "show", "l1")
    row = next(line for line in shown.stdout.splitlines() if line.startswith("0 "))
    assert "loop_over(square)" in row and "failed" in row
    assert "3 items checkpointed; ValueError: three is bad" in row, row
    assert show_json(tmp, "l1")["steps"][0]["outputPreview"] == "3 items checkpointed"
    fixed = cli(tmp, "run", "loop.py:squares", "--run-id", "l1", "--resume",
                env=child_env(tmp, FIXED="1"))  # fmt: skip
    assert fixed.returncode == 0 and fixed.stdout.strip() == "[0, 1, 4, 9, 16]", fixed.stderr
    assert counts(tmp) == {"item0": 1, "item1": 1, "item2": 1, "item3": 2, "item4": 1}


def test_a_fork_of_one_position_says_one_position(tmp: Path) -> None:
    assert cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    forked = cli(tmp, "fork", "r1", "--at", "1", "--new-run-id", "r2")
    assert forked.returncode == 0, forked.stderr
    assert "(1 position copied; nothing executed)" in forked.stderr  # was "1 positions"


PARENT = '''
import durable


@durable.step
def square(x: int) -> int:
    return x * x


@durable.workflow
def child(k: int) -> int:
    return square(k) + 1


@durable.workflow
def parent(n: int) -> int:
    return child(n) + child(n + 1)
'''


def test_show_names_the_child_runs_a_parent_ran(tmp: Path) -> None:
    """The parent's rows said `workflow  parent.child  completed` and no
    more: which run to `durable show` for the child's own steps was left to
    guessing from `durable runs`."""
    write_flow(tmp, PARENT, "parent.py")
    done = cli(tmp, "run", "parent.py:parent", "--run-id", "p", "--var", "n=2")
    assert done.returncode == 0 and done.stdout.strip() == "15", done.stderr
    shown = cli(tmp, "show", "p").stdout
    assert "parent.child (run p.0)" in shown and "parent.child (run p.1)" in shown, shown
    steps = show_json(tmp, "p")["steps"]
    assert [s["childRunId"] for s in steps] == ["p.0", "p.1"]
    child = cli(tmp, "show", "p.1")  # the id shown is one `durable show` takes
    assert child.returncode == 0 and "square" in child.stdout
    assert [s["childRunId"] for s in show_json(tmp, "p.1")["steps"]] == [None]


def test_an_empty_run_id_is_refused_not_replaced_by_another(tmp: Path) -> None:
    """`--run-id ""` (a `--run-id "$RUN"` with RUN unset) ran the derived run,
    and with --resume resumed the newest unfinished run: another run than the
    one meant, executed."""
    waiting = cli(tmp, "run", "flow.py:approval", "--run-id", "a1", "--var", "topic=x")
    assert waiting.returncode == 3, waiting.stderr
    for extra in ([], ["--resume"]):
        refused = cli(tmp, "run", "flow.py:approval", "--run-id", "", "--var", "topic=x",
                      "--var", "reviewer_decision=ok", *extra)  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert "invalid run id ''" in refused.stderr
    assert counts(tmp) == {"draft": 1}
    assert [(r["runId"], r["status"]) for r in runs_json(tmp)] == [("a1", "suspended")]


def test_an_age_without_a_unit_is_refused_not_read_as_seconds(tmp: Path) -> None:
    """`durable gc --older-than 7` (meant: a week) removed every run older
    than 7 seconds: each finished run of the store, at exit 0."""
    assert cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    for command in (["gc", "--older-than", "7"], ["cache", "prune", "--older-than", "7"]):
        refused = cli(tmp, *command)
        assert refused.returncode == 2, refused.stderr
        assert "'7' has no unit" in refused.stderr and "7d" in refused.stderr, refused.stderr
    assert [r["runId"] for r in runs_json(tmp)] == ["r1"]
    assert cli(tmp, "gc", "--older-than", "7s", "--dry-run").returncode == 0  # units still work


def test_values_without_json_is_a_usage_error_not_ignored(tmp: Path) -> None:
    """`durable show r1 --values` printed the table of previews, as without
    the flag: the full outputs asked for were silently not shown."""
    assert cli(tmp, "run", "flow.py:pipeline", "--run-id", "r1", "--var", "n=1").returncode == 0
    refused = cli(tmp, "show", "r1", "--values")
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    assert "--values needs --json" in refused.stderr
    full = show_json(tmp, "r1", "--values")
    assert full["steps"][0]["value"] == 2


def test_removing_a_parent_names_the_child_runs_that_stay(tmp: Path) -> None:
    """`durable rm p` said "removed parent.parent/p" and no more: its child
    runs p.0 and p.1 stayed in the store, unmentioned."""
    write_flow(tmp, PARENT, "parent.py")
    assert cli(tmp, "run", "parent.py:parent", "--run-id", "p", "--var", "n=2").returncode == 0
    removed = cli(tmp, "rm", "p")
    assert removed.returncode == 0, removed.stderr
    assert "removed parent.parent/p" in removed.stdout
    assert "its child runs stay: p.0, p.1 (durable rm p.0 p.1 removes them)" in removed.stderr
    assert sorted(r["runId"] for r in runs_json(tmp)) == ["p.0", "p.1"]


def test_a_bad_retry_option_is_named_with_its_value() -> None:
    """`@durable.step(retries=-1)` said "retries, retry_delay and max_delay
    must be >= 0 and backoff >= 1", not which of the four was wrong."""
    with pytest.raises(durable.ConfigurationError, match=r"given retries=-1, retry_delay=1.0"):

        @durable.step(retries=-1)
        def nothing() -> None:
            pass


def test_a_run_stopped_after_one_step_says_one_step(tmp: Path) -> None:
    write_flow(tmp, "import durable\n\n@durable.step\ndef a():\n    return 1\n\n"
               "@durable.step\ndef b():\n    raise KeyboardInterrupt\n\n"
               "@durable.workflow\ndef wf():\n    a()\n    return b()\n", "ki.py")  # fmt: skip
    stopped = cli(tmp, "run", "ki.py:wf", "--run-id", "k")
    assert stopped.returncode == 130, stopped.stderr
    assert "run k interrupted by SIGINT with 1 step recorded" in stopped.stderr  # was "1 steps"
