"""The 45th new-user walk, on the command line: started as `python -m
durable`, the prose of `--help` and of warnings names the command as it was
started; a suspended run's `continue with:` line names the parameters its
suspend() asks for, and its placeholder, pasted unchanged, runs nothing."""

from __future__ import annotations

import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._cli.common import own_warnings
from durable._cli.main import main
from durable._errortext import PACKAGE, program

REL = """\
import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def fetch(repo: str) -> list[str]:
    note("fetch")
    return [repo + "-a", repo + "-b"]


@durable.step
def publish(notes: list[str], decision: str) -> str:
    note("publish")
    return f"{decision}: {notes}"


@durable.workflow
def release_notes(repo: str, reviewer_decision: str | None = None, dry_run: bool = False) -> str:
    notes = fetch(repo)
    if reviewer_decision is None:
        durable.suspend("waiting for reviewer_decision")
    return publish(notes, reviewer_decision)


@durable.step
def broken(x: int) -> float:
    return 10 / x


@durable.workflow
def divide(x: int = 0) -> float:
    return broken(x)


@durable.workflow
def held(repo: str, approver: str | None = None) -> str:
    notes = fetch(repo)
    if approver is None:
        durable.suspend("a person must look first")
    return publish(notes, approver)
"""

# A command named in prose as `durable show`, not as the tool was started.
_BARE = re.compile(r"(?<!-m )(?<![\w/.-])durable (?:run|runs|show|rm|gc|fork|cancel|recover|cache|COMMAND)\b")


@pytest.fixture
def as_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The tool started as `python3 -m durable` (no `durable` on PATH)."""
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-m", "durable", "--help"])
    monkeypatch.setattr(sys, "argv", ["/site/durable/__main__.py", "--help"])
    program.cache_clear()
    yield program()
    program.cache_clear()


@pytest.mark.parametrize(
    "command", [[], ["run"], ["runs"], ["show"], ["rm"], ["gc"], ["fork"], ["cancel"], ["recover"],
                ["cache"], ["cache", "ls"], ["cache", "clear"], ["cache", "prune"]],
)  # fmt: skip
def test_help_names_every_command_as_the_tool_was_started(
    command: list[str], as_module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `python3 -m durable fork --help` said "resume it with durable
    run ... --run-id NEW --resume", `runs --help` "as `durable show` counts
    them", `cancel --help` "only `durable run --restart` runs it again":
    commands that fail pasted where no `durable` is on PATH."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps prose across lines
    assert not _BARE.findall(out), out
    assert f"{as_module} " in out


def test_a_warning_names_the_command_as_the_tool_was_started(as_module: str) -> None:
    """Before: a warning of the run as a whole said `remove it with `durable
    cache clear s``, as from a library's frame, however the tool was started."""
    message = "the entry may be served: remove it with `durable cache clear s`"
    with own_warnings():  # as the command prints a warning (`warnings.showwarning` formats so)
        said = [warnings.formatwarning(message, RuntimeWarning, where, 1)
                for where in (PACKAGE + "_core/cache.py", __file__)]  # durable's own line, a user's
    assert all(f"`{as_module} cache clear s`" in line for line in said), said
    assert not _BARE.findall(" ".join(said)), said


@pytest.fixture
def rel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "rel.py").write_text(REL)
    return tmp_path


def _continue(err: str) -> list[str]:
    return shlex.split(err.rpartition("continue with: ")[2].partition(" (to answer")[0])[1:]


def test_a_suspended_run_names_the_parameters_its_suspend_asks_for(
    rel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run rel.py:release_notes --run-id r1
    --resume --var NAME=VALUE`, the parameter to give left to be guessed
    (pasted, NAME is no parameter). The line `durable run` and `durable
    show` print names the parameter the reason names (else those that are
    None); pasted with VALUE unchanged it runs nothing, with a value it ends."""
    assert main(["run", "rel.py:release_notes", "--var", "repo=x", "--run-id", "r1"]) == 3
    err = capsys.readouterr().err
    said = "continue with: durable run rel.py:release_notes --run-id r1 --resume --var reviewer_decision=VALUE"
    assert said in err, err
    assert main(["show", "r1"]) == 0
    shown = capsys.readouterr().err
    assert said in shown, shown
    pasted = _continue(err)
    assert main(pasted) == 2  # VALUE as typed is the placeholder: nothing runs
    err = capsys.readouterr().err
    assert "--var reviewer_decision=VALUE: VALUE is a placeholder" in err, err
    assert (rel / "counts").read_text() == "fetch\n"
    assert main([w.replace("=VALUE", "=approved") for w in pasted]) == 0
    assert "approved: ['x-a', 'x-b']" in capsys.readouterr().out
    assert (rel / "counts").read_text() == "fetch\npublish\n"


def test_a_suspend_whose_reason_names_no_parameter_names_those_that_are_none(
    rel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "rel.py:held", "--var", "repo=x", "--run-id", "h1"]) == 3
    err = capsys.readouterr().err
    assert "--run-id h1 --resume --var approver=VALUE" in err, err
    assert main(["run", "rel.py:held", "--run-id", "h1", "--resume", "--var", "approver=ann"]) == 0
    assert (rel / "counts").read_text() == "fetch\npublish\n"


def test_the_word_value_itself_is_given_as_json(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The placeholder's refusal says how to give the string VALUE, and that works."""
    assert main(["run", "rel.py:held", "--var", "repo=VALUE", "--run-id", "h2"]) == 2
    err = capsys.readouterr().err
    assert "nothing was run" in err and "--var 'repo=\"VALUE\"'" in err, err
    assert main(["run", "rel.py:held", "--var", 'repo="VALUE"', "--run-id", "h2"]) == 3
    assert (rel / "counts").read_text() == "fetch\n"


def test_a_failed_step_says_where_in_the_users_code_it_raised(
    rel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `run d1 failed at step 1 (position 0, broken):
    ZeroDivisionError: division by zero`, then "fix the cause": which line
    raised was not said, nor that --debug prints the traceback."""
    assert main(["run", "rel.py:divide", "--run-id", "d1"]) == 1
    err = capsys.readouterr().err
    line = REL.splitlines().index("    return 10 / x") + 1
    assert f"  raised at rel.py, line {line}, in broken: return 10 / x (--debug prints the traceback)\n" in err, err


def test_a_script_s_printed_command_is_one_its_python_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `.venv/bin/python flow.py` of a venv not activated (the
    README's `pip install .` into a fresh venv) printed `Suspended: ... or
    from a shell: durable --store ... run flow.py:wf ...`, and no `durable`
    was on PATH: `command not found`. A process not started as the command
    prints `durable` only when the `durable` on PATH is its Python's own."""
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "flow.py"])
    monkeypatch.setattr(sys, "argv", ["flow.py"])
    other = tmp_path / "other" / "durable"  # another environment's command
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    said = []
    for path in ("/nonexistent", str(other.parent), os.path.dirname(sys.executable)):
        monkeypatch.setenv("PATH", path)
        program.cache_clear()
        said.append(program())
    program.cache_clear()
    by_python = f"{shlex.quote(sys.executable)} -m durable"
    assert said == [by_python, by_python, "durable"]
