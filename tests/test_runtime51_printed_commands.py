"""Every next-command line the CLI prints runs as printed (VALUE filled
in): `continue with:` (of `run` and `show`), `run it with:` (`fork`),
`fix the cause, then:`, a cancelled run's and `restart it with:`'s
restart, and the ways out of a refusal. `durable fork --at` of the `wait_for` a suspended run stopped at (or
of a position before it) printed `run it with: ... --resume` without the
`--input` that answers it: typed as printed, the fork stopped at that wait
again (exit 3), since a suspended attempt writes no plan naming its wait."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from durable._cli.main import main
from durable._errortext import program

FLOW = """
import os
import durable


@durable.step
def prep(n: int) -> int:
    return n + 1


@durable.step
def check(a: int) -> int:
    if os.path.exists("broken"):
        raise ValueError("broken")
    return a * 10


@durable.workflow
def wf(n: int) -> int:
    a = prep(n)
    return check(a) if durable.wait_for("approve") else -1
"""

pytestmark = pytest.mark.slow  # the command line in process, a second or two: the same on every Python

LABELS = (
    "continue with: ", "run it with: ", "fix the cause, then: ", "runs again only afresh, with: ",
    "re-run from the first change: ", "continue with the old records: ", "start fresh: ", "restart it with: ",
)  # fmt: skip


def _printed(said: str) -> list[list[str]]:
    """Each next command in `said`, as the words a shell gives `durable`."""
    head, out = shlex.split(program()), []
    for line in said.splitlines():
        label = next((x for x in LABELS if x in line), None)
        if label is not None:
            words = shlex.split(line.split(label, 1)[1].split(" (after an edit")[0].replace("=VALUE", "=yes"))
            assert words[: len(head)] == head, line
            out.append(words[len(head) :])
    return out


def _run(argv: list[str], code: int, capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    assert main(argv) == code, capsys.readouterr().err
    return _printed(capsys.readouterr().err)


def test_each_printed_next_command_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    lines = _run(["run", "flow.py:wf", "--var", "n=1", "--run-id", "r1"], 3, capsys)  # waits for approve
    lines += _run(["fork", "r1", "--at", "1", "--new-run-id", "f1"], 0, capsys)  # at the wait
    lines += _run(["fork", "r1", "--at", "0", "--new-run-id", "f0"], 0, capsys)  # before it
    lines += _run(["show", "f1"], 0, capsys)
    lines += _run(["run", "flow.py:wf", "--run-id", "r1", "--restart"], 2, capsys)  # n: the recorded one
    assert main(["run", "flow.py:wf", "--var", "n=1", "--run-id", "c1"]) == 3
    assert main(["cancel", "c1"]) == 0
    capsys.readouterr()
    lines += _run(["show", "c1"], 0, capsys)
    assert main(["run", "flow.py:wf", "--var", "n=1", "--run-id", "b1"]) == 3
    (tmp_path / "broken").touch()
    capsys.readouterr()
    lines += _run(["run", "flow.py:wf", "--run-id", "b1", "--resume", "--input", "approve=yes"], 1, capsys)
    (tmp_path / "broken").unlink()  # the cause fixed
    runs = [w[w.index("--run-id") + 1] for w in lines]
    assert runs == ["r1", "f1", "f0", "f1", "r1", "c1", "b1"]
    for words in lines:
        if "--restart" in words:  # afresh: its wait asks again, and says how to answer it
            [words] = _run(words, 3, capsys)
        assert main(words) == 0, (words, capsys.readouterr().err)
        assert capsys.readouterr().out.strip() == "20", words
        if words[words.index("--run-id") + 1] == "f1":  # ran to its end: `show` of it says nothing more
            assert _run(["show", "f1"], 0, capsys) == []


@pytest.mark.filterwarnings("ignore:run 'e1'. definition changed:UserWarning")  # the rebase, as asked
def test_each_way_out_of_a_refusal_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    ids = ["e0", "e1", "e2"]
    for run_id in ids:
        assert main(["run", "flow.py:wf", "--var", "n=1", "--run-id", run_id]) == 3
    (tmp_path / "flow.py").write_text(FLOW.replace("n + 1", "n + 2"))  # prep edited: refused
    capsys.readouterr()
    ways = [_run(["run", "flow.py:wf", "--run-id", r, "--resume", "--input", "approve=yes"], 2, capsys) for r in ids]
    assert [len(w) for w in ways] == [3, 3, 3]  # rerun, rebase, restart
    for k, (run_id, value) in enumerate(zip(ids, ["30", "20", "30"], strict=True)):  # the rebase keeps prep's 2
        words = ways[k][k]
        assert words[words.index("--run-id") + 1] == run_id
        assert main(words) == 0, (words, capsys.readouterr().err)
        assert capsys.readouterr().out.strip() == value, words
