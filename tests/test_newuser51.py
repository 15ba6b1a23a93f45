"""The 51st new-user walk, on durability levels and the command line:
`durable show` and `durable runs --json` said nothing of the level a run's
records were written under, so a user who ran with `--durability none` (or
whose child run took its caller's level) could not tell afterwards what a
power loss may take of it. `durable fork RUN --at N` of a run whose
process died said that its unfinished step "may be executing now; fork
again once it has finished", which it never will."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from durable._cli.main import main

FAMILY = """\
import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def leaf(i: int) -> int:
    note("leaf")
    return i + 1


@durable.workflow
def child(i: int) -> int:
    return leaf(i)


@durable.workflow
def parent() -> int:
    return child(1) + leaf(2)
"""


@pytest.fixture
def family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("DURABLE_DURABILITY", "none")  # the store's level
    (tmp_path / "fam.py").write_text(FAMILY)
    return tmp_path


def _shown(run_id: str, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict[str, object]]:
    assert main(["show", run_id]) == 0
    text = capsys.readouterr().out.splitlines()
    assert main(["show", run_id, "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def test_show_and_runs_say_the_level_each_run_was_written_under(
    family: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: neither `durable show` nor its `--json` named the level:
    the text's head had no such line and the document no such field. A
    child run without a level of its own takes the stronger of its
    caller's and its store's (docs/storage.md), which it now shows."""
    assert main(["run", "fam.py:parent", "--run-id", "p1", "--durability", "batch"]) == 0
    assert main(["run", "fam.py:parent", "--run-id", "p2"]) == 0  # the store's: none
    capsys.readouterr()
    for run_id, level in (("p1", "batch"), ("p1.0", "batch"), ("p2", "none"), ("p2.0", "none")):
        text, doc = _shown(run_id, capsys)
        assert f"durability {level}" in text, (run_id, text[:7])
        assert doc["durability"] == level, (run_id, doc)
    assert main(["show", "p1.0", "--html", "p.html"]) == 0
    assert " · durability batch · " in (family / "p.html").read_text()
    assert main(["runs", "--json"]) == 0
    listed = {d["runId"]: d["durability"] for d in json.loads(capsys.readouterr().out)}
    assert listed == {"p1": "batch", "p1.0": "batch", "p2": "none", "p2.0": "none"}, listed
    assert (family / "counts").read_text().split() == ["leaf"] * 4


HELPED = """\
import os

import durable

SCALE = 2


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


def scaled(x: int) -> int:
    return x * SCALE


@durable.step
def a(x: int) -> int:
    note("a")
    return scaled(x)


@durable.step
def b(x: int) -> int:
    note("b")
    if not os.path.exists("fixed"):
        raise RuntimeError("not yet")
    return x + 1


@durable.workflow
def wf() -> int:
    return b(a(3))
"""


def test_a_constant_a_helper_reads_is_named_by_the_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: SCALE edited between a failure and the resume, the refusal
    said only "a: helper flow.py:scaled changed", whose code had not
    changed: the constant the helper reads, the real cause, went unnamed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(HELPED)
    assert main(["run", "flow.py:wf", "--run-id", "h1"]) == 1
    (tmp_path / "flow.py").write_text(HELPED.replace("SCALE = 2", "SCALE = 3"))
    (tmp_path / "fixed").touch()
    capsys.readouterr()
    assert main(["run", "flow.py:wf", "--run-id", "h1", "--resume"]) == 2
    said = capsys.readouterr().err.splitlines()
    assert "(changed: a: helper flow.scaled changed (constant SCALE changed): " in said[0], said
    assert (tmp_path / "counts").read_text().split() == ["a", "b"]  # the refusal ran nothing
    (tmp_path / "flow.py").write_text(HELPED.replace("x * SCALE", "x * SCALE * 1"))  # its code alone
    assert main(["run", "flow.py:wf", "--run-id", "h1", "--resume"]) == 2
    assert "(changed: a: helper flow.scaled changed: " in capsys.readouterr().err
    assert main(["run", "flow.py:wf", "--run-id", "h1", "--resume", "--on-change", "rerun"]) == 0
    assert (tmp_path / "counts").read_text().split() == ["a", "b", "a", "b"]


KILLED = """\
import os

import durable


@durable.step
def a() -> int:
    return 1


@durable.step
def b(x: int) -> int:
    os._exit(9)  # as the out-of-memory killer would


@durable.workflow
def wf() -> int:
    return b(a())
"""


@pytest.mark.slow  # a forked process, killed
def test_fork_past_a_killed_runs_end_says_it_was_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "position 1 of run 'k1' is not finished (the run is marked
    running: that step may be executing now; fork again once it has
    finished)" of a run `durable runs` lists as interrupted; and `--at -1`
    was told of that position too, not that positions count from 0."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(KILLED)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves by os._exit only
        try:
            main(["run", "flow.py:wf", "--run-id", "k1"])
        finally:
            os._exit(1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 9
    capsys.readouterr()
    assert main(["fork", "k1", "--at", "2"]) == 2
    said = capsys.readouterr().err
    assert "position 1 of run 'k1' is not finished (the run was interrupted: its process died" in said, said
    assert "may be executing now" not in said and "must be between 0 and 1" in said, said
    assert main(["fork", "k1", "--at", "-1"]) == 2
    said = capsys.readouterr().err
    assert "fork position -1 is out of range: positions count from 0, so " in said, said
    assert main(["fork", "k1", "--at", "1", "--new-run-id", "k2"]) == 0  # what it says works


READS = """\
import os
from pathlib import Path

import durable


@durable.step
def load(path: str) -> int:
    durable.artifact(path)  # an input: its content counts
    return len(Path(path).read_text())


@durable.step
def b(x: int) -> int:
    if not os.path.exists("fixed"):
        raise RuntimeError("not yet")
    return x + 1


@durable.workflow
def wf() -> int:
    return b(load("data.txt"))
"""


def test_a_step_run_again_for_its_changed_input_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the resume after data.txt changed printed "[0] load
    executed", as if the record had been lost; why it ran again was kept
    in its record and said nowhere."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(READS)
    (tmp_path / "data.txt").write_text("hello")
    assert main(["run", "flow.py:wf", "--run-id", "d1"]) == 1
    (tmp_path / "data.txt").write_text("hello world")
    (tmp_path / "fixed").touch()
    capsys.readouterr()
    assert main(["run", "flow.py:wf", "--run-id", "d1", "--resume"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == ["  [0] load executed again: artifact data.txt changed", "  [1] b executed"], lines
