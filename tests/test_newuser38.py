"""The 38th new-user walk, on the command line, in process."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from durable._cli.main import main

LOOKS = [
    ["runs"],
    ["runs", "--json"],
    ["gc", "--keep-last", "1"],
    ["cache", "ls"],
    ["cache", "clear"],
    ["cache", "prune", "--max-size", "1GB"],
    ["recover", "flow.py:wf"],
    ["recover", "flow.py:wf", "--json"],
]


@pytest.mark.parametrize("command", LOOKS, ids=" ".join)
def test_a_command_given_a_store_folder_that_is_not_there_exits_2(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Before: `durable --store /no/such/folder runs` (gc, cache ls, clear,
    prune) said "there is no such folder" but exited 0, as for an empty
    store, so a script took the typo for an empty listing; `recover` and
    `runs --json` did not even say it. Now exit 2, as `show` does."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text("import durable\n\n@durable.workflow\ndef wf() -> int:\n"
                                      "    return 1\n")  # fmt: skip
    typo = str(tmp_path / "sotre")
    assert main(["--store", typo, *command]) == 2
    assert f"{typo}: there is no such folder" in capsys.readouterr().err
    assert not (tmp_path / "sotre").exists()


DASHED = """
import durable


@durable.step
def add(n: int) -> int:
    return n + 1


@durable.workflow
def wf(n: int) -> int:
    return add(n)


@durable.workflow
def waits() -> str:
    return durable.wait_for("ok")
"""


def test_the_status_lines_quote_a_run_id_that_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `run -x completed`, `run -w suspended ...`, `run -w of
    flow.waits cancelled`, `forked ... into -y`: an id that starts with `-`
    printed bare reads as an option, where every error quotes it (`no run
    '-x'`). A plain id stays bare (`run r1 completed`)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(DASHED)
    assert main(["run", "flow.py:wf", "--run-id=-x", "--var", "n=1"]) == 0
    assert "run '-x' completed\n" in capsys.readouterr().err
    assert main(["run", "flow.py:wf", "--run-id=-x", "--var", "n=1"]) == 0
    assert "run '-x' had already completed; its recorded value:\n" in capsys.readouterr().err
    assert main(["fork", "--at", "1", "--new-run-id=-y", "--", "-x"]) == 0
    out, err = capsys.readouterr()
    assert out == "-y\n" and "forked flow.wf/'-x' at position 1 into '-y' (" in err
    assert main(["run", "flow.py:waits", "--run-id=-w"]) == 3
    assert "run '-w' suspended at step 1" in capsys.readouterr().err
    assert main(["cancel", "--", "-w"]) == 0
    assert "run '-w' of flow.waits cancelled\n" in capsys.readouterr().err
    assert main(["run", "flow.py:wf", "--run-id", "r1", "--var", "n=1"]) == 0
    assert "run r1 completed\n" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typed", "told"),
    [
        (["show", "--run-id", "r1"], "durable show takes the run id as a word, not --run-id: "
         "durable show r1"),
        (["show", "--run-id", "-x"], "durable show takes the run id as a word, not --run-id: "
         "durable show -- -x"),
        (["rm", "--run-id=r1"], "durable rm takes the run id as a word, not --run-id: durable rm r1"),
        (["runs", "--workflow", "flow.wf"], "durable runs takes the workflow as a word, not "
         "--workflow: durable runs flow.wf"),
        (["cache", "ls", "--step", "s"], "durable cache ls takes the step as a word, not --step: "
         "durable cache ls s"),
        (["run", "flow.py:wf", "--run_id", "r1"], "durable run has no option --run_id; did you "
         "mean --run-id?"),
        (["run", "flow.py:wf", "--vars", "n=1"], "durable run has no option --vars; did you mean "
         "--var?"),
        (["fork", "r1", "--to", "r2", "--at", "1"], "durable fork has no option --to; its "
         "options: --at, --new-run-id, --workflow, --json, --durability"),
    ],
)
def test_an_option_a_command_does_not_have_names_the_one_meant(
    typed: list[str], told: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show --run-id r1` advised "if --run-id is a run id:
    durable show --run-id r1", the very line refused; `runs --workflow W`,
    `cache ls --step S`, `run --run_id`/`--vars` said only "unrecognized
    arguments", and `fork r1 --to r2` took `--to` for a run id to put
    after `--`. Every advised line works as printed."""
    with pytest.raises(SystemExit) as e:
        main(typed)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert told in err, err
    assert "is a run id" not in err


def test_a_file_url_in_durable_store_is_not_taken_for_the_workflows_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: with DURABLE_STORE=file:///path/store, `durable run` said "run
    e1 is kept in store /path/store (the workflow's store=, or its script's
    durable.configure(store=))": the store was the one $DURABLE_STORE gave,
    which the other commands read too."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", f"file://{tmp_path}/store/")
    (tmp_path / "flow.py").write_text(DASHED)
    assert main(["run", "flow.py:wf", "--run-id", "e1", "--var", "n=1"]) == 0
    assert "is kept in store" not in capsys.readouterr().err
    assert main(["runs"]) == 0
    assert "e1" in capsys.readouterr().out


WAITS = """
import os

import durable


@durable.step
def a(n: int) -> int:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("a\\n")
    return n + 1


@durable.workflow
def waits(n: int) -> str:
    x = a(n)
    return f"{x} {durable.wait_for('ok')}"
"""


def test_the_ways_out_of_a_refused_resume_keep_the_input_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run ... --resume --input ok=yes` after an edit of a
    step was refused with "re-run from the first change: durable run ...
    --resume --on-change rerun": typed as printed, it ran the step again and
    suspended again at the same wait, the answer given dropped."""
    import shlex

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts"))
    (tmp_path / "flow.py").write_text(WAITS)
    assert main(["run", "flow.py:waits", "--run-id", "w1", "--var", "n=1"]) == 3
    (tmp_path / "flow.py").write_text(WAITS.replace("n + 1", "n + 100"))
    capsys.readouterr()
    assert main(["run", "flow.py:waits", "--run-id", "w1", "--resume", "--input", "ok=yes"]) == 2
    line = next(x for x in capsys.readouterr().err.splitlines() if "re-run from the first change" in x)
    assert line.endswith("--resume --on-change rerun --input ok=yes"), line
    assert main(shlex.split(line.split(": ", 1)[1])[1:]) == 0
    assert capsys.readouterr().out.strip() == '"101 yes"'
    assert (tmp_path / "counts").read_text() == "a\na\n"


def test_show_values_without_json_advises_the_command_for_this_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show r2 --values` said "--values needs --json:
    durable show RUN --json --values", a line to fill in, not to type."""
    store = str(tmp_path / "team runs")
    assert main(["--store", store, "show", "r2", "--values"]) == 2
    err = capsys.readouterr().err
    assert f"--values needs --json: durable --store '{store}' show r2 --json --values\n" in err


METHODS = """
import durable


class Jobs:
    @durable.workflow
    def method(self, n: int) -> int:
        return n

    @staticmethod
    @durable.workflow
    def static(n: int) -> int:
        return n
"""


def test_a_method_workflow_as_target_says_durable_run_cannot_make_its_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run flow.py:Jobs.method --var n=2` said "missing a
    required argument: 'self'; pass the workflow's arguments with --var
    NAME=VALUE", which no --var can give."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(METHODS)
    assert main(["run", "flow.py:Jobs.method", "--var", "n=2"]) == 2
    err = capsys.readouterr().err
    assert "Jobs.method in flow.py is a method of class Jobs: durable run cannot make the " \
        "instance it is called on; make it a @staticmethod or a function of the module, or " \
        "call it from Python" in err, err  # fmt: skip
    assert not (tmp_path / "store").exists()
    assert main(["run", "flow.py:Jobs.static", "--var", "n=2"]) == 0


def test_a_warning_under_the_command_says_durable_once() -> None:
    """Before: `durable: warning: durable: progress file ... not written`:
    a warning whose text starts with `durable: ` (for a Python caller; also
    a callback's that raised, a stop requested) got the command's prefix too."""
    from durable._cli.common import own_warnings
    from durable._errortext import PACKAGE

    said = UserWarning("durable: progress file p.json not written (...); the run goes on")
    with own_warnings():
        shown = warnings.formatwarning(said, UserWarning, PACKAGE + "_api/progress_file.py", 64)
    assert shown == "durable: warning: progress file p.json not written (...); the run goes on\n"
