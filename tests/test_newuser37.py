"""The 37th new-user walk, in process: run ids that start with `-`,
`--var` for a parameter of a type JSON has no word for, and `durable show`
of a run whose step is still running."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from durable._cli.main import main
from tests.test_newuser36 import FLOW, _advised  # the same release flow


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _usage_error(typed: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(typed)
    assert e.value.code == 2
    return capsys.readouterr().err


def test_a_run_id_that_starts_with_a_dash_is_advised_as_the_shell_and_argparse_take_it(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run flow.py:release --run-id -x
    --resume ...` and `durable show -x`: argparse took `-x` for an option
    ("--run-id: expected one argument", "required: RUN"), so no command
    advised for the run worked as printed, and typing `durable show -x`
    did not say how to name it."""
    assert main(["run", "flow.py:release", "--run-id=-x", "--var", "repo=r"]) == 3
    advised = _advised(capsys.readouterr().err, "continue with: ")
    assert advised[:4] == ["durable", "run", "flow.py:release", "--run-id=-x"]
    assert "required: RUN; `durable runs` lists the run ids" in _usage_error(["show"], capsys)
    err = _usage_error(["show", "-x"], capsys)
    assert "if -x is a run id: durable show -- -x" in err
    err = _usage_error(["run", "flow.py:release", "--run-id", "-x", "--resume"], capsys)
    assert "if -x is its value: durable run flow.py:release --run-id=-x --resume" in err
    assert main(["show", "--", "-x"]) == 0
    assert "continue with: durable run flow.py:release --run-id=-x --resume" in capsys.readouterr().err
    assert main([w.replace("decision=VALUE", "decision=ok") for w in advised][1:]) == 0
    assert capsys.readouterr().out.strip() == "\"ok: ['a', 'b']\""
    assert main(["run", "flow.py:release", "--run-id=-x", "--var", "repo=other"]) == 2
    err = capsys.readouterr().err
    assert "  read the result it completed with: durable show -- -x\n" in err
    assert main(_advised(err, "read the result it completed with: ")[1:]) == 0
    assert (flow / "counts").read_text() == "fetch\n"
    err = _usage_error(["rm", "r0", "-x"], capsys)
    assert "if -x is a run id: durable rm r0 -- -x" in err
    assert main(["rm", "--", "-x"]) == 0


TYPED = """
import datetime
import enum
import os
from pathlib import Path

import durable


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@durable.step
def plan(path: Path, day: datetime.date, at: datetime.datetime | None, color: Color) -> str:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("plan\\n")
    return f"{type(path).__name__} {path} {day!r} {at!r} {color}"


@durable.workflow
def draw(path: Path, day: datetime.date, color: Color, at: datetime.datetime | None = None) -> str:
    return plan(path, day, at, color)
"""

GIVEN = ["path=data/x.csv", "day=2024-05-31", "color=red", "at=2024-05-31T12:30:00"]


def _typed_run(run_id: str) -> list[str]:
    return ["run", "flow.py:draw", "--run-id", run_id, *(a for v in GIVEN for a in ("--var", v))]


@pytest.mark.parametrize("cli_first", [True, False])
def test_a_var_for_a_path_date_datetime_or_enum_parameter_is_what_the_api_passes(
    cli_first: bool, flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--var path=data/x.csv` for a `path: Path` reached the
    workflow as the str 'data/x.csv' (a date, a datetime, an Enum member as
    theirs): the step got another type than annotated, and a run started
    from Python with `Path("data/x.csv")` and resumed from the shell (or the
    other way) was refused as called with other arguments."""
    import datetime

    from durable._cli.target import load_target

    (flow / "flow.py").write_text(TYPED)
    wf = load_target("flow.py:draw")
    color = wf.fn.__globals__["Color"]
    by_api = {"path": Path("data/x.csv"), "day": datetime.date(2024, 5, 31),
              "color": color.RED, "at": datetime.datetime(2024, 5, 31, 12, 30)}  # fmt: skip
    if not cli_first:
        wf.with_options(run_id="r1")(**by_api)
    assert main(_typed_run("r1")) == 0
    out = capsys.readouterr().out
    assert "PosixPath data/x.csv datetime.date(2024, 5, 31) datetime.datetime(2024, 5, 31, 12, 30)" \
        " Color.RED" in out  # fmt: skip
    if cli_first:
        assert wf.with_options(run_id="r1")(**by_api) == json.loads(out)
    assert (flow / "counts").read_text() == "plan\n"  # run once, replayed the other way


@pytest.mark.parametrize(
    ("given", "told"),
    [
        ("day=yesterday", "--var day=yesterday is no date for flow.draw's day: write it as ISO "
         "8601, e.g. --var day=2024-05-31"),
        ("path=null", "--var path=null is no Path for flow.draw's path: --var gives JSON"),
        ("color=blue", "--var color=blue is no Color for flow.draw's color: write one of red, green"),
        ("at=5", "--var at=5 is no datetime for flow.draw's at: write it as ISO 8601"),
    ],
)
def test_a_var_that_its_annotation_cannot_take_is_refused_before_anything_runs(
    given: str, told: str, flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (flow / "flow.py").write_text(TYPED)
    name = given.split("=")[0]
    typed = [w if not w.startswith(f"{name}=") else given for w in _typed_run("r1")]
    assert main(typed) == 2
    assert told in capsys.readouterr().err
    assert not (flow / "counts").exists() and not (flow / "store").exists()


def test_a_path_var_is_the_text_typed_not_its_json_reading(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--var path=1.10` reads as the JSON number 1.1: the path is `1.10`."""
    (flow / "flow.py").write_text(TYPED)
    typed = [w if not w.startswith("path=") else "path=1.10" for w in _typed_run("r1")]
    assert main(typed) == 0
    assert json.loads(capsys.readouterr().out).startswith("PosixPath 1.10 ")


def test_the_restart_advised_for_a_cancelled_run_gives_its_path_date_and_enum(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `restart it with: ... --restart --var path=VALUE --var
    day=VALUE ...`: a Path, a date or an Enum member has no JSON form, so
    each was left to fill in, though --var now gives them by annotation."""
    (flow / "flow.py").write_text(TYPED.replace("return plan(path, day, at, color)",
                                                "durable.suspend('review')"))  # fmt: skip
    assert main(_typed_run("r1")) == 3
    assert main(["cancel", "r1"]) == 0
    assert main(["run", "flow.py:draw", "--run-id", "r1"]) == 4
    advised = _advised(capsys.readouterr().err, "restart it with: ")
    assert advised[-8:] == ["--var", "path=data/x.csv", "--var", "day=2024-05-31", "--var",
                            "color=red", "--var", "at=2024-05-31T12:30:00"]  # fmt: skip
    assert main(advised[1:]) == 3


FAILING = """
import os

import durable


@durable.step
def fetch(n: int) -> int:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("fetch\\n")
    return n + 1


@durable.step
def publish(n: int) -> int:
    raise ValueError("token expired")


@durable.workflow
def ship(n: int) -> int:
    return publish(fetch(n))
"""


def test_the_advice_after_a_failure_says_what_to_add_when_the_fix_is_in_the_code(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `fix the cause, then: durable run flow.py:ship --run-id s1
    --resume`: the usual fix, an edit of the failed step, made that very
    command refused as changed code (exit 2), which the advice did not say."""
    (flow / "flow.py").write_text(FAILING)
    assert main(["run", "flow.py:ship", "--run-id", "s1", "--var", "n=1"]) == 1
    line = next(x for x in capsys.readouterr().err.splitlines() if "fix the cause" in x)
    assert line == "  fix the cause, then: durable run flow.py:ship --run-id s1 --resume " \
        "(after an edit of the code: durable run flow.py:ship --run-id s1 --resume " \
        "--on-change rerun, which runs again from the first step that changed)"  # fmt: skip
    assert main(["show", "s1"]) == 0
    assert "  after an edit of the code, add --on-change rerun to that line\n" in capsys.readouterr().err
    (flow / "flow.py").write_text(FAILING.replace('raise ValueError("token expired")', "return n"))
    assert main(shlex.split(line.split("code: ")[1].split(",")[0])[1:]) == 0
    assert capsys.readouterr().out.strip() == "2"
    assert (flow / "counts").read_text() == "fetch\n"


def test_show_of_a_run_whose_step_is_running_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: while a new run's first step ran, `durable show` printed
    `steps 0 finished, next position 0` over an empty table (and, once a
    step had finished, no row for the one running): nothing said a step was
    in flight. The next position is now a row, `running`, until recorded."""
    import threading

    import durable

    entered, go, executed = threading.Event(), threading.Event(), []

    @durable.step
    def first() -> int:
        executed.append(1)
        entered.set()
        go.wait()
        return 1

    @durable.workflow(store=str(tmp_path / "store"), run_id="r1")
    def busy() -> int:
        return first()

    runner = threading.Thread(target=busy)
    runner.start()
    try:
        entered.wait()
        assert main(["--store", str(tmp_path / "store"), "show", "r1"]) == 0
    finally:
        go.set()
        runner.join()
    shown = capsys.readouterr().out.splitlines()
    assert shown[-1].split() == ["0", "-", "(not", "recorded)", "running", "1", "-", "in", "the", "first",
                                 "step", "or", "the", "body;", "no", "step", "has", "ended", "yet"]  # fmt: skip
    assert main(["--store", str(tmp_path / "store"), "show", "r1"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:2] == ["0", "step"] and row[2].endswith(".first") and row[3] == "completed"
    assert executed == [1]


@pytest.mark.slow  # two child processes
def test_the_drain_example_runs_again_in_the_same_folder(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """Before: the `request_stop()` example of docs/steering.md, run a
    second time beside its store, found run 'drain' completed: no step ran,
    its controller thread waited forever for one, and the script hung."""
    import subprocess
    import sys

    from .test_docs import BLOCKS

    (block,) = [b for b in BLOCKS if b.page == "docs/steering.md" and '"drain"' in b.source]
    (tmp_path / "example.py").write_text(block.source, encoding="utf-8")
    for _ in range(2):
        done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=child_env,
                              capture_output=True, text=True, timeout=20)  # fmt: skip
        assert done.returncode == 0, done.stderr


def test_a_removal_that_lost_its_lease_advises_an_rm_that_works_as_printed() -> None:
    """Before: "`durable rm -x` removes it", built without shell_words: for
    a run id `-x` (or `it's`) the line did not work as printed."""
    from durable._storage.removal import _stopped
    from durable.errors import LeaseLostError

    for run_id, advised in [("-x", "durable rm -- -x"), ("it's", "durable rm 'it'\"'\"'s'")]:
        assert f"`{advised}` removes it" in str(_stopped(run_id, LeaseLostError(run_id), 1, 2))


def test_a_target_without_its_workflow_names_the_command_with_it(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run flow.py` said only "target 'flow.py' must be
    path/to/file.py:workflow or package.module:workflow", leaving the
    workflow's name to find in the file."""
    assert main(["run", "flow.py", "--var", "repo=x"]) == 2
    err = capsys.readouterr().err
    assert "target 'flow.py' names no workflow; its workflows: release (give it as " \
        "flow.py:release)\n" in err  # fmt: skip
    assert not (flow / "counts").exists()  # loaded to name them, nothing run
    (flow / "empty.py").write_text("x = 1\n")
    assert main(["run", "empty.py"]) == 2
    assert "target 'empty.py' names no workflow; it defines none\n" in capsys.readouterr().err
