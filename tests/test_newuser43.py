"""The 43rd new-user walk, on the command line: the HTML timeline of a run
stopped in a step, the commands printed for a user to paste, a cancelled
run run again."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from durable._cli.main import main
from tests.test_html import Timeline
from tests.test_newuser41 import FLOW
from tests.test_newuser42 import THREE


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW.replace('suspend("held")', 'suspend("held <for> R&D")'))
    return tmp_path


def _timeline(path: Path, run_id: str) -> tuple[Timeline, str]:
    assert main(["show", run_id, "--html", str(path)]) == 0
    text = path.read_text()
    page = Timeline()
    page.feed(text)
    page.close()
    return page, text


def test_the_html_timeline_has_the_rows_the_text_view_has(
    flow: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the timeline had a row for `fetch` alone, of a run stopped by a
    Ctrl-C in `finish` (the text view: `1 - (not recorded) interrupted ...
    stopped after position 0 (fetch) ended`); none for where a suspended run
    waits; and the records a rerun left of changed code read `changed` and
    their old output, not why (`after a changed step: runs again`)."""
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 130
    page, _ = _timeline(flow / "g1.html", "g1")
    assert [(r["data-position"], r["data-name"], r["data-status"]) for r in page.rows] == [
        ("0", "fetch", "completed"),
        ("1", "(not recorded)", "interrupted"),
    ]
    assert page.bars["(not recorded)"] == "interrupted"
    said = "stopped after position 0 (fetch) ended, in the next step or the body"
    assert said in page.tips["(not recorded)"]
    # Resumed and stopped there again: the row is the latest attempt's, after its break.
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume"]) == 130
    _, text = _timeline(flow / "g1.html", "g1")
    rows = re.findall(r'class="row (?:step|resume)" data-(position="\d+"|resumed-at)', text)
    assert rows == ['position="0"', "resumed-at", 'position="1"'], rows
    monkeypatch.delenv("STOP")

    monkeypatch.setenv("HOLD", "1")  # where a suspended run waits, its reason escaped
    assert main(["run", "flow.py:gate", "--run-id", "g2"]) == 3
    page, text = _timeline(flow / "g2.html", "g2")
    assert [(r["data-position"], r["data-name"], r["data-status"]) for r in page.rows][1:] == [
        ("1", "suspend()", "suspended"),
    ]
    assert "waits: held <for> R&D" in page.tips["suspend()"]
    assert "held <for>" not in text and "held &lt;for&gt; R&amp;D" in text

    (flow / "three.py").write_text(THREE)
    monkeypatch.delenv("HOLD")
    assert main(["run", "three.py:w", "--run-id", "x"]) == 0
    (flow / "three.py").write_text(THREE.replace("n * 10", "n * 100"))
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "three.py:w", "--run-id", "x", "--resume", "--on-change", "rerun"]) == 3
    page, text = _timeline(flow / "x.html", "x")
    assert "code changed since it ran (was: 20)" in page.tips["b"]
    assert "after a changed step: runs again (was: 19)" in page.tips["c"]
    assert "<td class=\"out\">after a changed step: runs again (was: 19)</td>" in text
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\nfetch\nc\n"


def _pasted(line: str) -> list[str]:
    """The words of a printed `durable ...` command, as a shell splits them."""
    words = shlex.split(line)
    assert words[0] == "durable", line
    return words[1:]


def _told(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What a command argparse rejects says after `to do that: `."""
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(list(argv))
    err = capsys.readouterr().err
    assert "FILE.py" not in err and "FUNCTION" not in err, err
    return err


def test_a_guessed_command_names_the_run_s_script_and_function_and_works_when_pasted(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `durable resume g1` was told `to do that: durable run
    FILE.py:FUNCTION --run-id RUN --resume`, and `durable status g1` `durable
    show RUN`: neither works pasted, though the run's manifest names its
    script and function and the run id was typed."""
    monkeypatch.setenv("STOP", "ctrl-c")
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 130
    monkeypatch.delenv("STOP")
    err = _told(capsys, "status", "g1")
    assert err.rstrip().endswith("; to do that: durable show g1"), err
    err = _told(capsys, "resume", "g1")
    line = err.rstrip().rpartition("to do that: ")[2]
    assert line == "durable run flow.py:gate --run-id g1 --resume", err
    assert main(_pasted(line)) == 0
    assert (flow / "counts").read_text() == "fetch\nfinish\nfinish\n"
    store = str(flow / "store")  # a --store given is kept; a run it does not have is said
    err = _told(capsys, "--store", store, "continue", "nope")
    assert "no run nope in" in err and "`durable --store" in err and " runs` lists the runs" in err, err
    err = _told(capsys, "resume")  # no run id: what to do, no command to fill in
    assert "durable show RUN" not in err and "`durable runs` lists the runs" in err, err


def test_a_cancelled_run_says_how_it_runs_again(
    flow: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `durable show` of a cancelled run said nothing of what to do
    (of an interrupted one: `continue with: ...`), and `durable restart c1`
    was told `durable run FILE.py:FUNCTION --run-id RUN --restart --var
    NAME=VALUE`. Both now give the restart with the recorded arguments."""
    monkeypatch.setenv("HOLD", "1")
    assert main(["run", "flow.py:gate", "--run-id", "c1", "--var", "n=5"]) == 3
    monkeypatch.delenv("HOLD")
    assert main(["cancel", "c1"]) == 0
    capsys.readouterr()
    assert main(["show", "c1"]) == 0
    restart = "durable run flow.py:gate --run-id c1 --restart --var n=5"
    said = capsys.readouterr().err
    assert said == f"  cancelled: it runs again only afresh, with: {restart}\n", said
    assert _told(capsys, "restart", "c1").rstrip().endswith(f"; to do that: {restart}")
    capsys.readouterr()
    assert main(_pasted(restart)) == 0
    assert capsys.readouterr().out == "60\n"
    assert (flow / "counts").read_text() == "fetch\nfetch\nfinish\n"
    with pytest.raises(SystemExit):  # and what `cancel` does, before one cancels
        main(["cancel", "--help"])
    assert "only `durable run --restart` runs it again" in " ".join(capsys.readouterr().out.split())


def test_a_mistyped_script_or_workflow_name_is_told_the_one_meant(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run flw.py:gate` said `cannot load flw.py:
    FileNotFoundError: [Errno 2] No such file or directory: '/tmp/.../flw.py'`
    (no word of flow.py beside it), and `flow.py:gat` `flow.py has no gat`."""
    (flow / "other.py").write_text("import durable\n\n\n@durable.workflow\ndef gather() -> int:\n    return 1\n")
    capsys.readouterr()
    assert main(["run", "flw.py:gate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("durable: cannot load flw.py: there is no such file in "), err
    assert "did you mean flow.py? (flow.py:gate)" in err and "Errno" not in err, err
    assert main(["run", "flow.py:gat"]) == 2
    assert "flow.py has no gat; did you mean gate? its workflows: gate" in capsys.readouterr().err
    assert not (flow / "counts").exists()


APPROVAL = """\
import durable


@durable.step
def draft(n: int) -> str:
    with open("counts", "a") as f:
        f.write("draft\\n")
    return f"draft {n}"


@durable.workflow
def approval(n: int = 1) -> str:
    return draft(n) + ": " + durable.wait_for("decision")
"""


def test_a_run_waiting_for_an_input_prints_no_elided_command(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `run a1 suspended at step 2 (position 1): waiting for input
    'decision'; resume with inputs={'decision': ...} (durable run ...
    --resume --input decision=VALUE)`, the line above the whole command, and
    `durable show`'s status line the same: `durable run ...` fails pasted."""
    (flow / "appr.py").write_text(APPROVAL)
    capsys.readouterr()
    assert main(["run", "appr.py:approval", "--run-id", "a1"]) == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "run a1 suspended at step 2 (position 1): waiting for input 'decision'",
        "  continue with: durable run appr.py:approval --run-id a1 --resume --input decision=VALUE",
    ]
    assert main(["show", "a1"]) == 0
    out = capsys.readouterr().out
    assert "status    suspended (waiting for input 'decision')\n" in out and "..." not in out, out
    _, text = _timeline(flow / "a1.html", "a1")
    assert "waiting: waiting for input &#x27;decision&#x27;</p>" in text and "..." not in text
    assert main(["run", "appr.py:approval", "--run-id", "a1", "--resume", "--input", "decision=yes"]) == 0
    assert capsys.readouterr().out == '"draft 1: yes"\n'
    assert (flow / "counts").read_text() == "draft\n"
