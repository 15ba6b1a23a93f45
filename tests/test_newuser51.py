"""The 51st new-user walk, on durability levels and the command line:
`durable show` and `durable runs --json` said nothing of the level a run's
records were written under, so a user who ran with `--durability none` (or
whose child run took its caller's level) could not tell afterwards what a
power loss may take of it."""

from __future__ import annotations

import json
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
    assert main(["runs", "--json"]) == 0
    listed = {d["runId"]: d["durability"] for d in json.loads(capsys.readouterr().out)}
    assert listed == {"p1": "batch", "p1.0": "batch", "p2": "none", "p2.0": "none"}, listed
    assert (family / "counts").read_text().split() == ["leaf"] * 4
