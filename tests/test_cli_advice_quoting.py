"""The commands durable's advice prints are typed as printed: a workflow
file in a folder with a space in its name (`My Drive/flow.py`) is one
word of the shell, as the --store it was given already is."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """
import durable


@durable.step
def shout(topic: str) -> str:
    return topic.upper()


@durable.workflow
def review(topic: str) -> str:
    return shout(topic) + ": " + durable.wait_for("ok")
"""


def test_the_continue_line_quotes_a_workflow_file_in_a_folder_with_a_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`continue with: durable --store 'team runs' run My Drive/flow.py:review
    --run-id w1 ...` typed as printed ran `My` and choked on the rest."""
    folder = tmp_path / "My Drive"
    folder.mkdir()
    (folder / "quoted_flow.py").write_text(FLOW)
    monkeypatch.chdir(tmp_path)
    target = "My Drive/quoted_flow.py:review"
    argv = ["--store", "team runs", "run", target, "--run-id", "w1", "--var", "topic=owls"]
    assert main(argv) == 3
    said = capsys.readouterr().err
    line = next(x for x in said.splitlines() if "continue with: " in x)
    typed = shlex.split(line.split("continue with: ", 1)[1].replace("=VALUE", "=yes"))
    assert typed[0] == "durable"
    assert main(typed[1:]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == '"OWLS: yes"'
