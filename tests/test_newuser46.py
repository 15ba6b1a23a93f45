"""The 46th new-user walk, on the command line: an empty DURABLE_STORE is
refused as `--store ""` is; `durable fork` without a position, or with one
that is no number, says what --at takes and how to find it; no line the
command prints ends in a space."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from durable.errors import ConfigurationError

FLOW = """\
import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def add(x: int) -> int:
    note("add")
    return x + 1


@durable.workflow
def twice(n: int = 1) -> int:
    return add(n) + add(n + 1)


@durable.workflow
def held() -> int:
    add(0)
    durable.suspend("a person must look first")
    return 2
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_durable_store_is_refused_as_an_empty_store_flag_is(
    value: str, flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `DURABLE_STORE= durable run ...` (`DURABLE_STORE=$RUNS` with
    RUNS unset) wrote the run into ./.durable, silently, while `--store ""`
    was refused: the runs were then looked for where they were not."""
    monkeypatch.setenv("DURABLE_STORE", value)
    assert main(["run", "flow.py:twice", "--run-id", "r1"]) == 2
    err = capsys.readouterr().err
    assert "DURABLE_STORE is set but empty" in err and "unset DURABLE_STORE" in err, err
    assert not (flow / "counts").exists() and not (flow / ".durable").exists()
    assert main(["runs"]) == 2
    assert "DURABLE_STORE is set but empty" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="DURABLE_STORE is set but empty"):
        durable.open_store()
    monkeypatch.delenv("DURABLE_STORE")  # unset, as the message says: the default folder
    assert main(["run", "flow.py:twice", "--run-id", "r1"]) == 0
    assert (flow / ".durable").is_dir() and (flow / "counts").read_text() == "add\nadd\n"


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    return " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    "argv", [["fork", "r1", "--at", "x"], ["fork", "r1", "--at=two"], ["fork", "r1"], ["fork", "--at", "1.5", "r1"]]
)
def test_fork_says_what_at_takes_and_how_to_find_it(
    argv: list[str], flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable fork r1 --at x` said argparse's "argument --at:
    invalid int value: 'x'", and `durable fork r1` "the following arguments
    are required: --at": what a position is, and where to see one, unsaid."""
    assert main(["run", "flow.py:twice", "--run-id", "r1"]) == 0
    capsys.readouterr()
    err = _usage_error(argv, capsys)
    assert "invalid int value" not in err, err
    assert "the position of the first step to re-run" in err, err
    assert "POS column of `durable show r1`" in err, err
    assert "durable fork r1 --at POS" in err, err
    # the command shown, with a position from `durable show r1` in its place, forks
    shown = err.rpartition("numbers them: ")[2].split()
    assert shown[:4] == ["durable", "fork", "r1", "--at"], err
    assert main([*shown[1:3], "--at", "1"]) == 0
    assert "1 position copied" in capsys.readouterr().err


def test_fork_without_a_run_names_the_run_as_a_placeholder(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["fork", "--at", "x"], capsys)
    assert "POS column of `durable show RUN`" in err and "durable fork RUN --at POS" in err, err


def _ends_in_space(text: str) -> list[str]:
    return [line for line in text.splitlines() if line != line.rstrip()]


def test_no_line_the_command_prints_ends_in_a_space(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a cancelled run of a workflow without parameters printed
    `restart it with: durable run flow.py:held --run-id h1 --restart ` (a
    space at its end, pasted along). Every line of a walk through the
    commands (run, suspend, cancel, resume, show, runs, fork, errors) ends
    in a character that is not a space."""
    walk = [
        ["run", "flow.py:twice", "--run-id", "r1"],
        ["run", "flow.py:held", "--run-id", "h1"],
        ["cancel", "h1"],
        ["run", "flow.py:held", "--run-id", "h1", "--resume"],
        ["show", "h1"],
        ["show", "r1"],
        ["show", "r1", "--json"],
        ["runs"],
        ["fork", "r1", "--at", "1", "--new-run-id", "f1"],
        ["show", "f1"],
        ["run", "flow.py:twice", "--run-id", "f1", "--resume"],
        ["run", "flow.py:twice", "--run-id", "r1", "--var", "n=5"],
        ["rm", "nope"],
        ["gc", "--keep", "1", "--dry-run"],
        ["cache", "ls"],
    ]
    said = []
    for argv in walk:
        main(argv)
        out, err = capsys.readouterr()
        said += [(shlex.join(argv), line) for line in _ends_in_space(out + err)]
    assert not said, said
    restart = "restart it with: durable run flow.py:held --run-id h1 --restart"
    main(["run", "flow.py:held", "--run-id", "h1", "--resume"])
    assert restart + "\n" in capsys.readouterr().err
