"""The 38th new-user walk, on the command line, in process."""

from __future__ import annotations

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
