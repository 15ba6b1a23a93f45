"""cli52: one check of each setting's words (a level in capitals is that
level wherever it is given), a bad DURABLE_* variable warned of by the
commands that only read and refused by those that write, and a list of
names joined as English joins it. In process: `main([...])`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import durable
from durable._cli.main import main
from durable._manage.runs import list_runs
from durable._settings import setting


def test_a_word_in_capitals_is_that_word_wherever_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: DURABLE_DURABILITY=Batch was batch, durability="Batch" (on
    the decorator, a store, configure()) a ConfigurationError, and
    `--durability Batch` an invalid choice: two checks of one rule."""
    executed: list[str] = []

    @durable.step
    def inner() -> int:
        executed.append("inner")
        return 1

    @durable.workflow(store=str(tmp_path / "s"), run_id="child")
    def child() -> int:
        return inner()

    @durable.workflow(store=str(tmp_path / "s"), run_id="top", durability="Batch", on_change="Rerun")
    def top() -> int:
        return child() + 1

    assert top() == 2  # the child compares its caller's level with its store's
    assert executed == ["inner"]
    assert {i.run_id: i.durability for i in list_runs(durable.open_store(tmp_path / "s"))} == {
        "top": "batch", "child": "fsync"  # the store syncs more: its level
    }
    assert top.with_options(durability=" NONE ").options.durability == "none"
    assert durable.open_store(tmp_path / "t", durability="FSYNC").durability == "fsync"
    durable.configure(durability="Batch", log="Off", on_change="RERUN")
    assert (setting("durability"), setting("log"), setting("on_change")) == ("batch", "off", "rerun")
    durable.configure(durability=None, log=None, on_change=None)
    monkeypatch.setenv("DURABLE_DURABILITY", "Batch")
    assert setting("durability") == "batch"
    (tmp_path / "flow.py").write_text("import durable\n\n@durable.workflow\ndef job() -> int:\n    return 3\n")
    monkeypatch.chdir(tmp_path)
    assert main(["--store", "u", "run", "flow.py:job", "--run-id", "r", "--durability", "None",
                 "--on-change", "Rerun"]) == 0  # fmt: skip
    assert capsys.readouterr().out == "3\n"
    assert [i.durability for i in list_runs(durable.open_store(tmp_path / "u"))] == ["none"]
    with pytest.raises(durable.ConfigurationError) as e:
        durable.workflow(durability="paranoid")(lambda: 0)
    assert "durability must be one of 'fsync', 'batch', 'none', not 'paranoid'" in str(e.value)


@pytest.mark.parametrize(
    ("names", "said"),
    [(["MEM"], "MEM"), (["MEM", "TOOLS"], "MEM and TOOLS"), (["A", "B", "C"], "A, B and C")],
)
def test_names_are_joined_as_english_joins_them(names: list[str], said: str) -> None:
    from durable._errortext import and_list

    assert and_list(names) == said


def test_two_writes_a_replay_cannot_redo_are_said_in_english() -> None:
    """Before: "MEM, TOOLS, which a writes and another step reads, is not as
    a left it"."""
    from durable._core import changed

    changed.WRITERS[("a", "fp")] = ("MEM", "TOOLS")
    changed.WRITERS[("b", "fp")] = ("MEM",)
    try:
        assert changed._written("a", "fp").startswith(
            "MEM and TOOLS, which a writes and another step reads, are not as a left it"
        )
        assert changed._written("b", "fp").startswith(
            "MEM, which b writes and another step reads, is not as b left it"
        )
    finally:
        del changed.WRITERS[("a", "fp")], changed.WRITERS[("b", "fp")]



class Opaque:
    """A value only a pickle records."""

    def __init__(self, n: int) -> None:
        self.n = n


def test_a_bad_variable_is_warned_of_by_a_reading_command_and_refused_by_a_writing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    recwarn: pytest.WarningsRecorder,
) -> None:  # fmt: skip
    """Before: DURABLE_DURABILITY=paranoid (or DURABLE_ALLOW_PICKLE=flase)
    stopped `durable runs` and `durable show` (exit 2: the runs could not
    be looked at), while DURABLE_CANCEL_POLL=abc passed `durable rm` and
    `durable run` unsaid (a run was refused only at its first poll)."""
    executed: list[int] = []

    @durable.step
    def make() -> Opaque:
        executed.append(1)
        return Opaque(7)

    @durable.workflow(store=str(tmp_path / "s"), run_id="r1")
    def job() -> int:
        return make().n

    assert job() == 7
    for variable, value in [("DURABLE_DURABILITY", "paranoid"), ("DURABLE_ALLOW_PICKLE", "flase"),
                            ("DURABLE_CANCEL_POLL", "abc"), ("DURABLE_LOG", "loud")]:  # fmt: skip
        monkeypatch.setenv(variable, value)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "runs"]) == 0
    out = capsys.readouterr().out
    err = " ".join(str(w.message) for w in recwarn)  # `durable: warning: ...` on the command's stderr
    assert "r1" in out and "completed" in out
    assert "DURABLE_DURABILITY must be one of 'fsync', 'batch', 'none', not 'paranoid'" in err, err
    assert "DURABLE_CANCEL_POLL must be a number of seconds >= 0, not 'abc'; ignored by" in err, err
    assert "DURABLE_ALLOW_PICKLE must be one of 0, false, no, off (no) or 1, true, yes, on (yes)" in err
    assert "DURABLE_LOG must be one of 'off', 'error', 'warning', 'info', 'debug', not 'loud'" in err
    assert main([*store, "show", "r1", "--json", "--values"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "Opaque" not in json.dumps(doc["steps"][0].get("value")), doc  # a pickle is not loaded on a typo
    for writes in (["rm", "r1"], ["gc", "--status", "completed"], ["fork", "r1", "--at", "0"]):
        assert main([*store, *writes]) == 2, writes
        err = capsys.readouterr().err
        assert "DURABLE_DURABILITY must be one of 'fsync', 'batch', 'none', not 'paranoid'" in err, err
        assert "refused before anything was written; fix or unset DURABLE_DURABILITY, " in err, err
    monkeypatch.delenv("DURABLE_ALLOW_PICKLE")
    assert [i.run_id for i in list_runs(durable.open_store(tmp_path / "s", durability="fsync"))] == ["r1"]
    assert executed == [1]


JOB = """
import os

import durable


@durable.step
def count(n: int) -> int:
    with open(os.environ["CLI52_COUNTS"], "a") as f:
        f.write("count\\n")
    return n + 1


@durable.workflow
def job(n: int = 2) -> int:
    if n < 0:
        durable.suspend("n is negative: resume with --var n=1")
    return count(n)
"""


def test_rm_fork_run_and_gc_print_what_they_did_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `runs`, `show`, `cancel` and `recover` took --json, `rm`,
    `fork`, `run` and `gc` refused it (exit 2: unrecognized arguments), and
    a script had to parse their prose."""
    counts = tmp_path / "counts"
    monkeypatch.setenv("CLI52_COUNTS", str(counts))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(JOB)
    store = ["--store", str(tmp_path / "s")]

    def doc(*argv: str, code: int = 0) -> object:
        assert main([*store, *argv, "--json"]) == code, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)

    ran = doc("run", "flow.py:job", "--run-id", "r1")
    assert isinstance(ran, dict)
    assert {k: ran[k] for k in ("workflow", "runId", "status", "value", "valueType", "completedSteps",
                                "stepsExecuted", "stepsReplayed", "resumedFromStep")} == {
        "workflow": "flow.job", "runId": "r1", "status": "completed", "value": 3, "valueType": "json",
        "completedSteps": 1, "stepsExecuted": 1, "stepsReplayed": 0, "resumedFromStep": None,
    }  # fmt: skip
    waiting = doc("run", "flow.py:job", "--run-id", "r2", "--var", "n=-1", code=3)
    assert isinstance(waiting, dict)
    assert (waiting["runId"], waiting["status"]) == ("r2", "suspended")
    assert waiting["reason"] == "n is negative: resume with --var n=1"
    forked = doc("fork", "r1", "--at", "0", "--new-run-id", "f1")
    assert isinstance(forked, dict)
    assert {k: forked[k] for k in ("workflow", "runId", "status", "forkedFrom", "at")} == {
        "workflow": "flow.job", "runId": "f1", "status": "forked", "forkedFrom": "r1", "at": 0
    }
    gone = doc("gc", "--status", "suspended", "--dry-run")
    assert isinstance(gone, dict) and gone["dryRun"] is True
    assert [(r["runId"], r["status"]) for r in gone["removed"]] == [("r2", "suspended")]
    removed = doc("rm", "f1", "nope", code=2)
    assert isinstance(removed, list)
    assert [(r["runId"], r["workflow"], r["removed"]) for r in removed] == [
        ("f1", "flow.job", True), ("nope", None, False)
    ]
    assert removed[0]["error"] is None and "no run 'nope'" in removed[1]["error"]
    gone = doc("gc", "--status", "suspended")
    assert isinstance(gone, dict) and gone["dryRun"] is False
    assert [r["runId"] for r in gone["removed"]] == ["r2"]
    assert [i.run_id for i in list_runs(durable.open_store(tmp_path / "s"))] == ["r1"]
    assert counts.read_text().split() == ["count"]  # r1's step; r2 suspended before its step


def test_a_module_that_cannot_be_imported_says_where_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "cannot load imp.py: ModuleNotFoundError: No module named
    'nosuchmodule_cli52'", and no word of what to do: most often the
    `durable` on the PATH is another environment's than the script's."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "imp.py").write_text("import durable\nimport nosuchmodule_cli52\n")
    assert main(["--store", "s", "run", "imp.py:wf"]) == 2
    err = capsys.readouterr().err
    assert "No module named 'nosuchmodule_cli52'" in err, err
    assert f"Install nosuchmodule_cli52 in the Python the command runs in ({sys.executable})" in err, err
    assert "nothing was run" in err
    assert main(["--store", "s", "run", "nosuchpkg_cli52.flows:wf"]) == 2
    err = capsys.readouterr().err
    assert "There is no module nosuchpkg_cli52 here: run the command in the folder that holds it" in err, err
    assert not (tmp_path / "s").exists()  # nothing was written


def test_a_run_missing_from_a_command_that_executes_nothing_says_nothing_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable rm r1 --workflow other` (and show, cancel, fork of a
    run id another workflow has) said "nothing was executed", which a
    removal or a listing never does: what the user needs is that nothing
    was removed or changed."""

    @durable.workflow(name="job", store=str(tmp_path / "s"), run_id="r1")
    def job() -> int:
        return 1

    @durable.workflow(name="other", store=str(tmp_path / "s"), run_id="r2")
    def other() -> int:
        return 2

    assert job() + other() == 3
    for command in (["rm", "r1"], ["cancel", "r1"], ["fork", "r1", "--at", "0"], ["show", "r1"]):
        assert main(["--store", str(tmp_path / "s"), *command, "--workflow", "other"]) == 2
        err = capsys.readouterr().err
        assert "no run 'r1' of workflow 'other'" in err and "nothing was run or changed" in err, err
    assert sorted(i.run_id for i in list_runs(durable.open_store(tmp_path / "s"))) == ["r1", "r2"]


def test_the_listing_of_a_folder_above_the_store_names_the_command_as_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `python -m durable --store . runs` said "`durable --store
    ./.durable runs` lists them", which fails pasted where no `durable` is
    on the PATH; every other line of advice starts as the tool was started."""

    @durable.workflow(store=str(tmp_path / ".durable"), run_id="r1")
    def job() -> int:
        return 1

    assert job() == 1
    monkeypatch.setattr("durable._cli.common.program", lambda: "/venv/bin/python -m durable")
    assert main(["--store", str(tmp_path), "runs"]) == 0
    err = capsys.readouterr().err
    assert f"`/venv/bin/python -m durable --store {tmp_path / '.durable'} runs` lists them" in err, err
