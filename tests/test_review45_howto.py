"""`durable show` of a run started from another folder's script (`durable
run sub/flow.py:main`) printed `continue with: durable run flow.py:main
--run-id r1 --resume`: the manifest knows the script's name, not its
folder, and that line, pasted where the run was started, failed "cannot
load flow.py: there is no such file". A line that would fail so is said in
words instead, naming the script."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """
import durable, os

@durable.step
def s(x):
    if os.environ.get("FAIL"):
        raise RuntimeError("boom")
    return x

@durable.workflow
def main(x: int = 1):
    return s(x)
"""


def test_a_printed_line_names_no_script_that_is_not_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "flow.py").write_text(FLOW)
    monkeypatch.setenv("FAIL", "1")
    assert main(["run", "sub/flow.py:main", "--run-id", "r1"]) == 1
    capsys.readouterr()
    assert main(["show", "r1"]) == 0
    said = capsys.readouterr().err
    line = next(x for x in said.splitlines() if "continue with" in x)
    assert "durable run flow.py:main" not in line, line  # was: the line that fails pasted
    assert "flow.py:main" in line and "--run-id r1 --resume" in line, line
    words = shlex.split(line.partition("continue with: ")[2])
    if words[:2] == ["durable", "run"]:  # a line to paste: it works
        monkeypatch.delenv("FAIL")
        assert main(words[1:]) == 0
