"""The 36th new-user walk, in process: advice, options and stores that
misled someone following the docs."""

from __future__ import annotations

import json
import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._cli.main import main

FLOW = """
import os

import durable


@durable.step
def fetch(repo: str) -> list[str]:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("fetch\\n")
    return ["a", "b"]


@durable.workflow
def release(repo: str, decision: str | None = None) -> str:
    notes = fetch(repo)
    if decision is None:
        durable.suspend("waiting for decision")
    return f"{decision}: {notes}"
"""


@pytest.fixture
def flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _advised(err: str, label: str) -> list[str]:
    line = next(x for x in err.splitlines() if label in x)
    return shlex.split(line.split(label, 1)[1])


def test_the_advice_after_a_suspend_resumes_and_never_starts_a_run(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run flow.py:release --run-id r1 --var
    NAME=VALUE`, without the --resume that every other "continue with:"
    line (and the library's message) has: typed with the run id misspelt,
    it started a new run and executed its steps again."""
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    advised = _advised(capsys.readouterr().err, "continue with: ")
    assert advised == [
        "durable", "run", "flow.py:release", "--run-id", "r1", "--resume", "--var", "decision=VALUE"
    ]  # fmt: skip  (newuser45: the parameter its suspend() asks for, not NAME)
    typo = [w.replace("r1", "r2").replace("decision=VALUE", "decision=ok") for w in advised]
    assert main(typo[1:]) == 2  # refused: nothing runs under the misspelt id
    assert main([w.replace("decision=VALUE", "decision=ok") for w in advised][1:]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("ok: ['a', 'b']")
    assert (flow / "counts").read_text() == "fetch\n"


IN_PLACE = """
import durable


@durable.step
def add(rows: list[int]) -> int:
    rows.append(1)
    return len(rows)


@durable.workflow
def grow(n: int) -> int:
    rows = [n]
    return add(rows)  # the user's line
"""


def test_a_warning_points_at_the_users_line_and_the_command_speaks_for_itself(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: under `durable run`, a warning about the run as a whole (an
    input no wait took) printed as `.../bin/durable:8: UserWarning: ...` over
    `sys.exit(main())`, and one about a step's call (it changed its
    argument) as `durable/_core/steps.py:140` over a line of durable's:
    neither a line of the user's. The step's now points at the workflow's
    line calling it; the run's is the command's own `durable: warning:`."""
    (flow / "grow.py").write_text(IN_PLACE)
    shown: list[str] = []  # what the default `showwarning` would write to stderr
    monkeypatch.setattr(warnings, "showwarning", lambda *a, **k: shown.append(_printed_now(*a)))
    assert main(["run", "grow.py:grow", "--var", "n=1"]) == 0
    assert len(shown) == 1 and shown[0].startswith(f"{flow / 'grow.py'}:14: UserWarning: step ")
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    typo = ["run", "flow.py:release", "--run-id", "r1", "--resume", "--input", "decison=ok"]
    assert main(typo) == 3
    assert shown[1:] == [
        "durable: warning: run 'r1' suspends again, at suspend('waiting for decision'); no wait "
        "took the inputs given to this call ('decison'): a misspelt name? They are not kept: "
        "give them again with the next resume. A run stopped by suspend() takes new arguments, "
        "not inputs: resume(run_id, name=value) (durable run ... --resume --var name=value)\n"
    ]
    assert (flow / "counts").read_text() == "fetch\n"


def _printed_now(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, *rest: Any
) -> str:
    return warnings.formatwarning(message, category, filename, lineno)


def test_a_refusal_of_changed_code_gives_the_commands_to_type(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "start fresh with --restart, continue with the old records
    with --rebase-checkpoint, or re-run from the first change with
    --on-change rerun": flags, with the command around them left to
    rebuild. Each way out is now a command that works as printed."""
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    (flow / "flow.py").write_text(FLOW.replace('["a", "b"]', '["a", "b", "c"]'))
    capsys.readouterr()
    assert main(["run", "flow.py:release", "--run-id", "r1", "--resume"]) == 2
    err = capsys.readouterr().err
    again = _advised(err, "re-run from the first change: ")
    assert again == [
        "durable", "run", "flow.py:release", "--run-id", "r1", "--resume", "--on-change", "rerun"
    ]  # fmt: skip
    rebase = _advised(err, "or continue with the old records: ")
    assert rebase == [*again[:-2], "--rebase-checkpoint"]
    with pytest.warns(UserWarning, match="replaying recorded steps anyway"):
        assert main([*rebase[1:], "--var", "decision=old"]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("old: ['a', 'b']")
    assert (flow / "counts").read_text() == "fetch\n"
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=y"]) == 2
    err = capsys.readouterr().err
    assert "durable run flow.py:release --run-id r1 --on-change rerun --var repo=y" in err
    assert "  read the result it completed with: durable show r1\n" in err
    assert main(_advised(err, "re-run from the first step whose arguments differ: ")[1:]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("old: ['a', 'b', 'c']")
    assert (flow / "counts").read_text() == "fetch\nfetch\n"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        # No run r1 (newuser43: `FILE.py:FUNCTION` and `RUN` fail pasted; test_newuser43 has one).
        (["resume", "r1"], "`durable run` of a run, but there is no run r1 in .durable; `durable runs` lists the runs"),
        (["--store", "s", "answer", "r1"], "`durable --store s run` of a run, but there is no run r1 in s; "
         "`durable --store s runs` lists the runs"),
        (["ls"], "durable runs"),
        (["delete", "r1"], "durable rm r1"),
    ],
)
def test_a_command_guessed_from_the_api_names_the_one_that_does_it(
    typed: list[str], meant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Before: `durable resume r1` (wf.resume() is the API's word) said only
    "argument COMMAND: invalid choice: 'resume' (choose from 'runs', ...)"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(typed)
    assert e.value.code == 2
    assert f"; to do that: {meant}\n" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


VARIADIC = """
import durable


@durable.workflow
def summing(*xs: int, scale: int = 1, **extra: str) -> int:
    return sum(xs) * scale


@durable.workflow
def first(a: int, /, b: int = 0) -> int:
    return a + b
"""


@pytest.mark.parametrize(
    ("target", "given", "told"),
    [
        ("summing", "xs=5", "xs is *xs (extra positional arguments)"),
        ("first", "a=5", "a is positional-only (before the /)"),
    ],
)
def test_a_var_for_a_parameter_no_name_can_set_is_refused(
    target: str, given: str, told: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Before: `--var xs=5` for `*xs` ran summing() with xs=() and {'xs': 5}
    in **extra, printing 0 (exit 0); without **extra it said "got an
    unexpected keyword argument 'xs'; pass the workflow's arguments with
    --var NAME=VALUE", which is what was done."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "va.py").write_text(VARIADIC)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "run", f"va.py:{target}", "--var", given]) == 2
    err = capsys.readouterr().err
    assert f"durable: {told}, which --var cannot give" in err, err
    assert not (tmp_path / "s").exists()
    assert main([*store, "run", "va.py:summing", "--var", "scale=2", "--var", "tag=x"]) == 0


def test_a_misspelt_variable_is_told_at_the_users_line_or_by_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: told once, when durable's settings were imported: in a script
    as `durable/_settings.py:171: UserWarning: ...` over
    `warn_of_misspelt_variables()`, under `durable runs` the same, before
    the command started. Now at the first setting read: the user's call of
    the workflow, or the command's own `durable: warning:`."""
    from durable import _settings

    monkeypatch.setenv("DURABLE_STOER", "team")
    monkeypatch.setattr(_settings, "_told", [False])
    shown: list[str] = []
    monkeypatch.setattr(warnings, "showwarning", lambda *a, **k: shown.append(_printed_now(*a)))
    assert main(["--store", str(tmp_path), "runs"]) == 0
    assert shown == [
        "durable: warning: DURABLE_STOER is set, but durable reads no such variable: did you "
        "mean DURABLE_STORE? It is ignored.\n"
    ]
    monkeypatch.setattr(_settings, "_told", [False])

    @durable.workflow(run_id="r")
    def flow() -> int:
        return 1

    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match="DURABLE_STOER is set") as told:
        assert flow() == 1
    assert [w.filename for w in told] == [__file__]


@pytest.mark.parametrize("code", [0, 3])
def test_a_script_that_exits_as_it_is_loaded_is_not_taken_for_a_run(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a script ending in `sys.exit(main())` outside an `if __name__
    == "__main__":` block made `durable run script.py:wf` exit with main()'s
    code and say nothing: 0 read as "done", 3 as "suspended", and the
    workflow never ran."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.py").write_text(
        "import sys\n\nimport durable\n\n\n@durable.workflow\ndef wf() -> int:\n"
        f"    return 1\n\n\nsys.exit({code})\n"
    )
    assert main(["--store", str(tmp_path / "s"), "run", "script.py:wf"]) == 2
    err = capsys.readouterr().err
    assert f"durable: cannot load script.py: it called sys.exit({code}) as it was loaded " in err
    assert "(script.py, line 11); put the script's own work under " in err
    assert not (tmp_path / "s").exists()


CONFIGURED = """
import durable

durable.configure(store="team-runs")


@durable.step
def one(x: int) -> int:
    return x


@durable.workflow
def wf(x: int) -> int:
    if x > 1:
        durable.suspend("wait")
    return one(x)
"""


def test_durable_run_names_a_store_the_other_commands_would_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a script's `durable.configure(store="team-runs")` (or a
    workflow's store=) kept the run there, `durable run` said nothing of it,
    and the `durable runs` and `durable show c1` that follow said "no runs
    in .durable: there is no such folder"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DURABLE_STORE", raising=False)
    (tmp_path / "flow.py").write_text(CONFIGURED)
    assert main(["run", "flow.py:wf", "--var", "x=5", "--run-id", "c1"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "  run c1 is kept in store team-runs (the workflow's store=, or its script's "
        "durable.configure(store=)): `durable --store team-runs runs` lists it\n"
    ), err
    listed = err.split("`")[1].split()
    assert main([*listed[1:], "--json"]) == 0
    assert [r["runId"] for r in json.loads(capsys.readouterr().out)] == ["c1"]
    monkeypatch.setenv("DURABLE_STORE", "team-runs")  # the same store: nothing to say
    assert main(["run", "flow.py:wf", "--var", "x=1", "--run-id", "c2"]) == 0
    assert "is kept in store" not in capsys.readouterr().err
