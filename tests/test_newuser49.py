"""The 49th new-user walk, on the command line: `durable cancel --json`
left out when an earlier cancel had done it; `durable show --html` of a
run whose process died too often printed none of the ways out the text
form prints; a refusal under another durable's fingerprint rules, or of
a constant made by `time.time()`, said nothing of why or what to do; a
command or action left out named none; a run id given as `durable run`'s
target was told only the target's form."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from durable._cli.main import main

FLOW = """\
import os

import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def a() -> int:
    note("a")
    return 1


@durable.step
def b(x: int) -> int:
    note("b")
    if not os.path.exists("fixed"):
        os._exit(9)  # as the out-of-memory killer would
    return x + 1


@durable.workflow
def wf(n: int = 1) -> int:
    return b(a()) + n


@durable.workflow
def ask() -> str:
    a()
    return durable.wait_for("approval")


@durable.workflow
def gate() -> int:
    a()
    if not os.path.exists("approved"):
        durable.suspend("a person must approve first")
    return 1
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def test_cancel_json_says_since_when_an_earlier_cancel_did_it(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the second `durable cancel c1 --json` printed the first's
    document, status "cancelled", though the text form says "was already
    cancelled (at ...); nothing changed": a script could not tell."""
    assert main(["run", "flow.py:gate", "--run-id", "c1"]) == 3
    capsys.readouterr()
    assert main(["cancel", "c1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first == {"workflow": "flow.gate", "runId": "c1", "status": "cancelled", "since": None}, first
    assert main(["show", "c1", "--json"]) == 0
    updated = json.loads(capsys.readouterr().out)["updatedAt"]
    assert main(["cancel", "c1", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == {**first, "since": updated}, again
    assert (flow / "counts").read_text().split() == ["a"]


def _died_once() -> None:
    """`durable run flow.py:wf --run-id k1` in a forked process, which
    its step kills (os._exit)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves by os._exit only
        try:
            main(["run", "flow.py:wf", "--run-id", "k1"])
        finally:
            os._exit(1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 9


@pytest.mark.slow  # a forked process, killed
def test_show_html_of_a_killed_run_prints_and_shows_its_ways_out(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show k1 --html t.html` of a run failed with
    RunKilledError printed "wrote t.html" alone, and the page held the
    error, not one of the lines that go on (a plain --resume is refused
    again), which `durable show k1` prints."""
    _died_once()
    monkeypatch.setenv("DURABLE_MAX_RECOVERY_ATTEMPTS", "1")
    assert main(["run", "flow.py:wf", "--run-id", "k1", "--resume"]) == 1
    capsys.readouterr()
    assert main(["show", "k1"]) == 0
    ways = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(ways) == 4 and "a plain --resume is refused again" in ways[0], ways
    assert main(["show", "k1", "--html", "t.html"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["wrote t.html", *ways], err
    page = (flow / "t.html").read_text()
    for line in ways:
        assert line.strip().replace("'", "&#x27;") in page, line
    assert main(["show", "k1", "--html", "j.html", "--json"]) == 0  # the page alike, stderr none of them
    assert capsys.readouterr().err.splitlines() == ["wrote j.html"]
    assert (flow / "j.html").read_text() == page
    assert (flow / "counts").read_text().split() == ["a", "b"]  # the resume refused, running nothing


RULED = """\
import os

import durable

FACTOR = 3


@durable.step
def a(x: int) -> int:
    with open("counts", "a") as f:
        f.write("a\\n")
    return x + 1


@durable.step
def b(x: int) -> int:
    with open("counts", "a") as f:
        f.write("b\\n")
    return x * FACTOR


@durable.workflow
def ruled(x: int = 1) -> int:
    v = a(x)
    if not os.path.exists("go"):
        durable.suspend("wait for go")
    return b(v)
"""


def _as_recorded_under_other_rules(store: Path, rules: str | None) -> None:
    """Rewrite run o1's manifest as a durable whose rules digest FACTOR
    otherwise would have written it (`rules` None: one before the rules
    were noted): the user's code is the same."""
    from durable._storage.factory import open_store
    from durable._storage.manifest import read_manifest, write_manifest

    opened = open_store(str(store))
    manifest = read_manifest(opened, "flow_ruled.ruled", "o1")
    manifest.extra.pop("rules", None)
    if rules is not None:
        manifest.extra["rules"] = rules
    manifest.step_parts["b"]["const:FACTOR"] = "0" * 12
    manifest.steps["b"], manifest.fingerprint = "1" * 12, "2" * 12
    write_manifest(opened, manifest)


def test_a_run_recorded_under_other_fingerprint_rules_says_durable_changed(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a run recorded by an older durable whose rules digest a
    constant otherwise (no code changed) was refused as "b: constant
    FACTOR changed", nothing said that durable had changed, not the code.
    Now the refusal says it, and what to do: restart, or re-run from the
    first step that differs (on a fork, to keep the run)."""
    (flow / "flow_ruled.py").write_text(RULED)
    assert main(["run", "flow_ruled.py:ruled", "--run-id", "o1"]) == 3
    (flow / "go").touch()
    said = {}
    for rules in (None, "0123456789ab"):
        _as_recorded_under_other_rules(flow / "store", rules)
        capsys.readouterr()
        assert main(["run", "flow_ruled.py:ruled", "--run-id", "o1", "--resume"]) == 2
        err = capsys.readouterr().err
        assert "(changed: b: constant FACTOR changed" in err, err
        (said[rules],) = [x.strip() for x in err.splitlines() if "fingerprint rules" in x]
    assert said[None].startswith("This run was recorded by an older durable (one that did not note its "
                                 "fingerprint rules); if durable was upgraded since and you did not change "
                                 "that code, the difference is durable's fingerprint rules, not your code. "
                                 "Then start fresh (restart=True / --restart), or re-run from the first "
                                 "step that differs"), said  # fmt: skip
    assert said["0123456789ab"].startswith("This run was recorded by another version of durable, whose "
                                           "fingerprint rules differ from this one's (0123456789ab then, "), said  # fmt: skip
    assert said[None].endswith("to keep run 'o1' as it is, do that on a copy: `durable fork o1 --at POS`."), said
    # The way out said, taken: the step that differs runs again, the one before is kept.
    assert main(["run", "flow_ruled.py:ruled", "--run-id", "o1", "--resume", "--on-change", "rerun"]) == 0
    assert capsys.readouterr().out.strip() == "6"
    assert (flow / "counts").read_text().split() == ["a", "b"]
    # Recorded under this durable's rules, an edit of the code is refused without the note.
    (flow / "go").unlink()
    assert main(["run", "flow_ruled.py:ruled", "--run-id", "o2"]) == 3
    (flow / "flow_ruled.py").write_text(RULED.replace("FACTOR = 3", "FACTOR = 4"))
    (flow / "go").touch()
    capsys.readouterr()
    assert main(["run", "flow_ruled.py:ruled", "--run-id", "o2", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "(changed: b: constant FACTOR changed" in err and "fingerprint rules" not in err, err
    assert (flow / "counts").read_text().split() == ["a", "b", "a"]


STARTED = """\
import os
import time

import durable

START = time.time()
LIMIT = 3


@durable.step
def since(x: int) -> float:
    with open("counts", "a") as f:
        f.write("since\\n")
    return x + START * 0 + LIMIT


@durable.workflow
def timed(x: int = 1) -> float:
    v = since(x)
    if not os.path.exists("go"):
        durable.suspend("wait for go")
    return v
"""


def test_a_constant_made_by_a_call_is_named_with_its_statement_and_what_to_do(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a step reading `START = time.time()` was refused in a new
    process as "since: constant START changed", nothing edited, and no word
    of why or what to do. Now the statement that made it and the ways to
    keep such a value out of the fingerprint; a literal edited says no more
    than before."""
    (flow / "flow_started.py").write_text(STARTED)
    assert main(["run", "flow_started.py:timed", "--run-id", "t1"]) == 3
    (flow / "go").touch()
    capsys.readouterr()
    assert main(["run", "flow_started.py:timed", "--run-id", "t1", "--resume"]) == 2
    err = capsys.readouterr().err
    assert ("(changed: since: constant START changed (made by START = time.time()); if such a statement "
            "read a setting given otherwise (the environment, a file), that is the change; if it makes a new "
            "value in each process (time.time(), datetime.now(), uuid4()), that value differs on every resume: "
            "read it inside the step, pass it as an argument when it is an input (of the workflow, handed on "
            "to the step), or give the step version= when it cannot change what the step returns: ") in err, err  # fmt: skip
    (flow / "flow_started.py").write_text(STARTED.replace("LIMIT = 3", "LIMIT = 4"))
    assert main(["run", "flow_started.py:timed", "--run-id", "t1", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "(changed: since: constant LIMIT changed; constant START changed (made by START = time.time()); " in err, err
    assert (flow / "counts").read_text().split() == ["since"]


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ([], "required: COMMAND; choose one of: runs, show, rm, gc, fork, run, cancel, recover, cache "
             "(`durable --help` says what each does)"),
        (["cache"], "required: ACTION; choose one of: ls, clear, prune (`durable cache --help` says what "
                    "each does)"),
        (["cache", "--json"], "required: ACTION; choose one of: ls, clear, prune (`durable cache --help` "
                              "says what each does); durable cache has no option --json"),
        (["cache", "list"], "invalid choice: 'list' (choose from 'ls', 'clear', 'prune'); did you mean ls? "
                            "(durable cache ls)"),
        (["cancel", "r1", "r2", "--json"], "unrecognized arguments: r2; durable cancel takes one run id, a "
                                           "command each: durable cancel r1 --json; durable cancel r2 --json"),
        (["run", "flow.py:wf", "--var", "n"], "--var 'n' must look like NAME=VALUE; give its value: --var n=VALUE"),
    ],
    ids=["durable", "cache", "cache-json", "cache-list", "cancel-two", "var-alone"],
)
def test_a_command_or_action_left_out_or_mistyped_is_told_the_choices(
    typed: list[str], said: str, flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable` alone and `durable cache` said only "the
    following arguments are required: COMMAND" (ACTION), naming none;
    `durable cache list` no near action, `durable cache --json` nothing
    of the option; `durable cancel r1
    r2` only "unrecognized arguments: r2"; `--var n` no line to type."""
    try:
        code = main(typed)
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert said in err, err


def test_a_run_id_given_as_the_target_of_run_is_told_the_line_that_continues_it(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable run g1`, the run's id where the script and
    function belong, said only "target 'g1' must be path/to/file.py:workflow
    or package.module:workflow"; now also that g1 is a run and the line
    that continues it, which works pasted. A word that is no run's id is
    told as before; `durable recover g1` the line that names its workflow."""
    assert main(["run", "flow.py:gate", "--run-id", "g1"]) == 3
    capsys.readouterr()
    assert main(["run", "g1"]) == 2
    err = capsys.readouterr().err.strip()
    head = "durable: target 'g1' must be path/to/file.py:workflow or package.module:workflow"
    assert err == f"{head}; g1 is the id of a run of flow.gate; to go on with it: durable run flow.py:gate --run-id g1 --resume", err  # fmt: skip
    assert main(["run", "g2"]) == 2
    assert capsys.readouterr().err.strip() == head.replace("g1", "g2")
    assert main(["recover", "g1", "--json"]) == 2  # it takes the workflow: the line that names it
    assert capsys.readouterr().err.strip().endswith(
        "; g1 is the id of a run of flow.gate; recover takes its workflow: durable recover flow.py:gate --json"
    )
    (flow / "approved").touch()
    assert main(["run", "flow.py:gate", "--run-id", "g1", "--resume"]) == 0
    assert (flow / "counts").read_text().split() == ["a"]


def test_a_fork_at_an_input_is_told_to_answer_it(flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the refusal of an input answered again advises `durable fork
    q1 --at 1` "to answer it again"; the fork then said "run it with:
    durable run flow.py:ask --run-id q2 --resume" (and `durable show q2`
    "continue with:" the same), which, pasted, suspended again at the input.
    Now both lines carry `--input approval=VALUE`, which answers it pasted."""
    assert main(["run", "flow.py:ask", "--run-id", "q1"]) == 3
    assert main(["run", "flow.py:ask", "--run-id", "q1", "--resume", "--input", "approval=yes"]) == 0
    capsys.readouterr()
    assert main(["fork", "q1", "--at", "1", "--new-run-id", "q2"]) == 0
    (run,) = _lines(capsys.readouterr().err, "run it with: ")
    assert run == "durable run flow.py:ask --run-id q2 --resume --input approval=VALUE", run
    assert main(["show", "q2"]) == 0
    assert _lines(capsys.readouterr().err, "continue with: ") == [run]
    assert main(shlex.split(run.replace("VALUE", "no"))[1:]) == 0
    assert capsys.readouterr().out.strip() == '"no"'
    assert (flow / "counts").read_text().split() == ["a"]


def _lines(err: str, head: str) -> list[str]:
    return [x.split(head, 1)[1] for x in err.splitlines() if head in x]


def test_a_global_counted_by_its_contents_is_said_so() -> None:
    """Before: "now SETTINGS changed" (the part's key, `now:`, read as a
    word), for a settings object whose contents differ."""
    from durable._fingerprint.changes import describe_change

    assert describe_change({"now:SETTINGS": "1"}, {"now:SETTINGS": "2"}) == "the contents of SETTINGS changed"
    assert describe_change({}, {"now:SETTINGS": "2"}) == "now uses the contents of SETTINGS"
