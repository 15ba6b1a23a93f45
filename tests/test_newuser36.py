"""The 36th new-user walk, in process: advice, options and stores that
misled someone following the docs."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._cli.main import main

FLOW = """
import os

import durable


@durable.step
def fetch(repo: str) -> list[str]:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("fetch\\n")
    return ["a", "b"]


@durable.workflow
def release(repo: str, decision: str | None = None) -> str:
    notes = fetch(repo)
    if decision is None:
        durable.suspend("waiting for decision")
    return f"{decision}: {notes}"
"""


@pytest.fixture
def flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FLOW_COUNTS", str(tmp_path / "counts"))
    (tmp_path / "flow.py").write_text(FLOW)
    return tmp_path


def _advised(err: str, label: str) -> list[str]:
    line = next(x for x in err.splitlines() if label in x)
    return shlex.split(line.split(label, 1)[1])


def test_the_advice_after_a_suspend_resumes_and_never_starts_a_run(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `continue with: durable run flow.py:release --run-id r1 --var
    NAME=VALUE`, without the --resume that every other "continue with:"
    line (and the library's message) has: typed with the run id misspelt,
    it started a new run and executed its steps again."""
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    advised = _advised(capsys.readouterr().err, "continue with: ")
    assert advised == [
        "durable", "run", "flow.py:release", "--run-id", "r1", "--resume", "--var", "NAME=VALUE"
    ]  # fmt: skip
    typo = [w.replace("r1", "r2").replace("NAME=VALUE", "decision=ok") for w in advised]
    assert main(typo[1:]) == 2  # refused: nothing runs under the misspelt id
    assert main([w.replace("NAME=VALUE", "decision=ok") for w in advised][1:]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("ok: ['a', 'b']")
    assert (flow / "counts").read_text() == "fetch\n"


@pytest.mark.parametrize("kind", ["step", "workflow"])
@pytest.mark.parametrize(
    ("version", "shown"), [(3, "3 (int)"), (1.10, "1.1 (float)"), ("", "'' (str)"), (b"2", "b'2' (bytes)")]
)
def test_a_version_that_is_not_a_non_empty_string_is_refused(
    kind: str, version: object, shown: str
) -> None:
    """Before: version=1.10 was taken as "1.1" (the same as version=1.1),
    version="" as a version, and any object by its str(), an address in it
    changing with every process; the docs give version= a string."""
    decorator: Any = durable.step if kind == "step" else durable.workflow
    with pytest.raises(durable.ConfigurationError) as e:
        decorator(version=version)(lambda x: x)
    assert str(e.value) == (
        f"{kind} version= takes a non-empty string, such as version=\"2\", not {shown}"
    )


def test_a_workflow_name_that_is_empty_is_refused() -> None:
    """Before: @durable.workflow(name="") fell back to the function's name
    without a word (a step's name="" is refused)."""
    with pytest.raises(durable.ConfigurationError) as e:
        durable.workflow(name="")(lambda x: x)
    assert str(e.value) == "workflow name= takes a non-empty string, not '' (str)"


def test_a_step_decorated_twice_is_refused(tmp_path: Path) -> None:
    """Before: `@durable.step(retries=3)` written over
    `@durable.step(persist=False)` was taken: the inner step ran as a plain
    call inside the outer one, whose persist=True recorded the secret the
    inner one kept out of the store (a workflow decorated twice is refused)."""

    def fetch(x: int) -> int:
        return x

    with pytest.raises(durable.ConfigurationError) as e:
        durable.step(retries=3)(durable.step(fetch))
    assert "fetch is already a durable step: decorate the function once" in str(e.value)
    assert "@durable.step(retries=3, ...)" in str(e.value)


@pytest.mark.parametrize("where", ["file", "below a file"])
def test_a_store_that_is_a_file_is_a_configuration_error(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 1 and "store afile failed: listing /: [Errno 20] the
    store's root is not a folder ... Records already written are intact.";
    a run said "taking the lease .../lease: [Errno 17] File exists". The
    store's path is the user's setting: exit 2, naming it, before anything
    is read or written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("notes\n")
    path = "afile" if where == "file" else "afile/runs"
    ran: list[int] = []

    @durable.workflow(store=path, run_id="r1")
    def job() -> int:
        ran.append(1)
        return 1

    told = (
        f"store {path} is not a folder: {tmp_path / 'afile'} is a file. Give the folder "
        "the runs are kept in (--store, store=, $DURABLE_STORE), or move the file away; "
        "nothing was read or written"
    )
    with pytest.raises(durable.ConfigurationError) as e:
        job()
    assert str(e.value) == told
    assert ran == []
    for command in (["runs"], ["show", "r1"], ["gc"]):
        assert main(["--store", path, *command]) == 2
        assert told in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "notes\n"


IN_PLACE = """
import durable


@durable.step
def add(rows: list[int]) -> int:
    rows.append(1)
    return len(rows)


@durable.workflow
def grow(n: int) -> int:
    rows = [n]
    return add(rows)  # the user's line
"""


def test_a_warning_points_at_the_users_line_and_the_command_speaks_for_itself(
    flow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: under `durable run`, a warning about the run as a whole (an
    input no wait took) printed as `.../bin/durable:8: UserWarning: ...` over
    `sys.exit(main())`, and one about a step's call (it changed its
    argument) as `durable/_core/steps.py:140` over a line of durable's:
    neither a line of the user's. The step's now points at the workflow's
    line calling it; the run's is the command's own `durable: warning:`."""
    (flow / "grow.py").write_text(IN_PLACE)
    shown: list[str] = []  # what the default `showwarning` would write to stderr
    monkeypatch.setattr(warnings, "showwarning", lambda *a, **k: shown.append(_printed_now(*a)))
    assert main(["run", "grow.py:grow", "--var", "n=1"]) == 0
    assert len(shown) == 1 and shown[0].startswith(f"{flow / 'grow.py'}:14: UserWarning: step ")
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    typo = ["run", "flow.py:release", "--run-id", "r1", "--resume", "--input", "decison=ok"]
    assert main(typo) == 3
    assert shown[1:] == [
        "durable: warning: run 'r1' suspends again, at suspend('waiting for decision'); no wait "
        "took the inputs given to this call ('decison'): a misspelt name? They are not kept: "
        "give them again with the next resume. A run stopped by suspend() takes new arguments, "
        "not inputs: resume(run_id, name=value) (durable run ... --resume --var name=value)\n"
    ]
    assert (flow / "counts").read_text() == "fetch\n"


def _printed_now(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, *rest: Any
) -> str:
    return warnings.formatwarning(message, category, filename, lineno)


def test_a_steps_warning_in_a_script_points_at_its_call(store: durable.Store) -> None:
    """The library's warnings take the same rule: the in-place one pointed at
    durable/_core/steps.py."""

    @durable.step
    def add(rows: list[int]) -> int:
        rows.append(1)
        return len(rows)

    @durable.workflow(store=store)
    def grow(n: int) -> int:
        return add([n])

    with pytest.warns(UserWarning, match="changed an object it was given") as told:
        grow(1)
    assert [w.filename for w in told] == [__file__]


def test_show_counts_a_moved_kept_item_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: items a, b, c kept by a failed block, then resumed with the
    items in another order (their records moved to the new indexes, the old
    copies left until written over): `durable show` said "4 items
    checkpointed" of a block with four items, one of which never finished."""
    import os

    ran: list[str] = []

    @durable.step
    def work(x: str) -> str:
        ran.append(x)
        if x == "bad":
            raise ValueError(x)
        return x * 2

    @durable.workflow(store=str(tmp_path), run_id="r", name="moves")
    def flow() -> list[str]:
        return durable.loop_over(work, os.environ["ITEMS"].split(","), checkpoint_items=True)

    for order in ("a,b,c,bad", "bad,c,a,b"):
        monkeypatch.setenv("ITEMS", order)
        with pytest.raises(ValueError, match="bad"):
            flow()
    assert sorted(ran) == ["a", "b", "bad", "bad", "c"]
    capsys.readouterr()
    assert main(["--store", str(tmp_path), "show", "r"]) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("0 "))
    assert "3 items checkpointed; ValueError: bad" in row, row


def test_a_refusal_of_changed_code_gives_the_commands_to_type(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "start fresh with --restart, continue with the old records
    with --rebase-checkpoint, or re-run from the first change with
    --on-change rerun": flags, with the command around them left to
    rebuild. Each way out is now a command that works as printed."""
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=x"]) == 3
    (flow / "flow.py").write_text(FLOW.replace('["a", "b"]', '["a", "b", "c"]'))
    capsys.readouterr()
    assert main(["run", "flow.py:release", "--run-id", "r1", "--resume"]) == 2
    err = capsys.readouterr().err
    again = _advised(err, "re-run from the first change: ")
    assert again == [
        "durable", "run", "flow.py:release", "--run-id", "r1", "--resume", "--on-change", "rerun"
    ]  # fmt: skip
    rebase = _advised(err, "or continue with the old records: ")
    assert rebase == [*again[:-2], "--rebase-checkpoint"]
    with pytest.warns(UserWarning, match="replaying recorded steps anyway"):
        assert main([*rebase[1:], "--var", "decision=old"]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("old: ['a', 'b']")
    assert (flow / "counts").read_text() == "fetch\n"
    assert main(["run", "flow.py:release", "--run-id", "r1", "--var", "repo=y"]) == 2
    err = capsys.readouterr().err
    assert "durable run flow.py:release --run-id r1 --on-change rerun --var repo=y" in err
    assert "  read the result it completed with: durable show r1\n" in err
    assert main(_advised(err, "re-run from the first step whose arguments differ: ")[1:]) == 0
    assert capsys.readouterr().out.strip() == json.dumps("old: ['a', 'b', 'c']")
    assert (flow / "counts").read_text() == "fetch\nfetch\n"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (["resume", "r1"], "durable run FILE.py:FUNCTION --run-id RUN --resume"),
        (["--store", "s", "answer", "r1"], "durable --store s run FILE.py:FUNCTION --run-id RUN --resume --input NAME=VALUE"),
        (["ls"], "durable runs"),
        (["delete", "r1"], "durable rm RUN"),
    ],
)
def test_a_command_guessed_from_the_api_names_the_one_that_does_it(
    typed: list[str], meant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Before: `durable resume r1` (wf.resume() is the API's word) said only
    "argument COMMAND: invalid choice: 'resume' (choose from 'runs', ...)"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(typed)
    assert e.value.code == 2
    assert f"; to do that: {meant}\n" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


VARIADIC = """
import durable


@durable.workflow
def summing(*xs: int, scale: int = 1, **extra: str) -> int:
    return sum(xs) * scale


@durable.workflow
def first(a: int, /, b: int = 0) -> int:
    return a + b
"""


@pytest.mark.parametrize(
    ("target", "given", "told"),
    [
        ("summing", "xs=5", "xs is *xs (extra positional arguments)"),
        ("first", "a=5", "a is positional-only (before the /)"),
    ],
)
def test_a_var_for_a_parameter_no_name_can_set_is_refused(
    target: str, given: str, told: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Before: `--var xs=5` for `*xs` ran summing() with xs=() and {'xs': 5}
    in **extra, printing 0 (exit 0); without **extra it said "got an
    unexpected keyword argument 'xs'; pass the workflow's arguments with
    --var NAME=VALUE", which is what was done."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "va.py").write_text(VARIADIC)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "run", f"va.py:{target}", "--var", given]) == 2
    err = capsys.readouterr().err
    assert f"durable: {told}, which --var cannot give" in err, err
    assert not (tmp_path / "s").exists()
    assert main([*store, "run", "va.py:summing", "--var", "scale=2", "--var", "tag=x"]) == 0


def test_the_readme_example_run_again_says_how_to_read_its_result(store: durable.Store) -> None:
    """Before: the README's example, run a second time as a script, raised
    "completed with other arguments than this call's: reviewer_decision:
    'approved' -> None" with three ways out, each running or discarding
    something; reading the result it completed with (the gotcha's advice)
    was not among them."""
    fetched: list[str] = []

    @durable.step
    def fetch(repo: str) -> list[str]:
        fetched.append(repo)
        return ["a"]

    @durable.workflow(store=store)
    def notes(repo: str, reviewer_decision: str | None = None) -> str:
        commits = fetch(repo)
        if reviewer_decision is None:
            durable.suspend("waiting for reviewer_decision")
        return f"{reviewer_decision}: {commits}"

    with pytest.raises(durable.Suspended) as waiting:
        notes("org/repo")
    assert notes.resume(waiting.value.run_id, reviewer_decision="ok").value == "ok: ['a']"
    with pytest.raises(durable.DefinitionChangedError) as again:
        notes("org/repo")
    run_id = waiting.value.run_id
    assert (
        f"  * read the result it completed with: resume({run_id!r}) returns it "
        f"(durable show {run_id})\n"
    ) in str(again.value)
    assert notes.resume(run_id).value == "ok: ['a']"
    assert fetched == ["org/repo"]


@pytest.mark.parametrize(
    ("option", "told"),
    [
        ({"allow_pickle": "no"}, "allow_pickle= takes True or False, not 'no' (str)"),
        ({"signing_key": ""}, "signing_key= is empty"),
        ({"signing_key": 3}, "signing_key= takes a str or bytes key, not 3 (int)"),
        ({"blob_threshold": "1"}, "blob_threshold= takes a whole number of bytes >= 0, not '1'"),
    ],
)
def test_a_store_option_of_the_wrong_type_is_refused(
    option: dict[str, Any], told: str, tmp_path: Path
) -> None:
    """Before: open_store(allow_pickle="no") (a truthy string) loaded
    pickles, signing_key="" (an unset secret) wrote unsigned records without
    a word, and signing_key=3 or blob_threshold="1" failed at the first
    write with a TypeError far from the option."""
    with pytest.raises(durable.ConfigurationError, match="^" + re.escape(told)):
        durable.open_store(tmp_path / "s", **option)
    assert not (tmp_path / "s").exists()


def test_a_run_looked_for_under_the_wrong_workflow_names_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show e2 --workflow edit.pipe` of a run of edit2.pipe
    said "no run 'e2' of workflow 'edit.pipe' ... Check the run id (`durable
    runs edit.pipe` lists them)", a list without it; a resume by that name
    already named the workflow that has it."""
    for name in ("edit.pipe", "edit2.pipe"):

        @durable.workflow(store=str(tmp_path), run_id=f"r-{name}", name=name)
        def flow() -> int:
            return 1

        assert flow() == 1
    store = ["--store", str(tmp_path)]
    for command in (["show", "r-edit2.pipe"], ["rm", "r-edit2.pipe"], ["fork", "r-edit2.pipe", "--at", "0"]):
        assert main([*store, *command, "--workflow", "edit.pipe"]) == 2
        err = capsys.readouterr().err
        assert "A run 'r-edit2.pipe' exists under another workflow, 'edit2.pipe'" in err, err
    assert main([*store, "runs", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


def test_a_value_that_holds_itself_is_said_to(store: durable.Store) -> None:
    """Before: a step returning a list that contains itself failed with "it
    is nested deeper than Python's recursion limit": the list is two levels
    deep, and nothing said to look for a cycle."""
    ran: list[int] = []

    @durable.step
    def build() -> list[object]:
        ran.append(1)
        looped: list[object] = [1]
        looped.append(looped)
        return looped

    @durable.workflow(store=store)
    def flow() -> int:
        return len(build())

    with pytest.raises(durable.SerializationError, match=r"or holds itself \(a list, dict or "):
        flow()
    assert ran == [1]


def test_a_misspelt_variable_is_told_at_the_users_line_or_by_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: told once, when durable's settings were imported: in a script
    as `durable/_settings.py:171: UserWarning: ...` over
    `warn_of_misspelt_variables()`, under `durable runs` the same, before
    the command started. Now at the first setting read: the user's call of
    the workflow, or the command's own `durable: warning:`."""
    from durable import _settings

    monkeypatch.setenv("DURABLE_STOER", "team")
    monkeypatch.setattr(_settings, "_told", [False])
    shown: list[str] = []
    monkeypatch.setattr(warnings, "showwarning", lambda *a, **k: shown.append(_printed_now(*a)))
    assert main(["--store", str(tmp_path), "runs"]) == 0
    assert shown == [
        "durable: warning: DURABLE_STOER is set, but durable reads no such variable: did you "
        "mean DURABLE_STORE? It is ignored.\n"
    ]
    monkeypatch.setattr(_settings, "_told", [False])

    @durable.workflow(run_id="r")
    def flow() -> int:
        return 1

    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match="DURABLE_STOER is set") as told:
        assert flow() == 1
    assert [w.filename for w in told] == [__file__]


NESTED = """
import durable


@durable.step
def double(x: int) -> int:
    return 2 * x


@durable.workflow
def inner(x: int) -> int:
    if x > 100:
        durable.suspend("too big")
    return double(x)


@durable.workflow
def middle(x: int) -> int:
    return inner(x)


@durable.workflow
def outer(x: int) -> int:
    return middle(x) + 1
"""


def test_show_of_a_child_run_says_to_continue_its_top_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `durable show n2.0.0` (a child run that suspended) advised
    `continue with: durable run FILE.py:FUNCTION --run-id n2.0.0 --resume
    --var NAME=VALUE`: resumed alone with x=5, the child completed, and the
    parent's resume (with its own x) was then refused as a call with other
    arguments. A child run goes on when the run on top of it resumes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nest.py").write_text(NESTED)
    store = ["--store", str(tmp_path / "s")]
    assert main([*store, "run", "nest.py:outer", "--var", "x=200", "--run-id", "n2"]) == 3
    capsys.readouterr()
    assert main([*store, "show", "n2.0.0"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "  n2.0.0 is a child run of run n2 of nest.outer: it goes on when that run resumes\n"
        f"  continue with: durable --store {tmp_path / 's'} run FILE.py:FUNCTION --run-id n2 "
        "--resume --var NAME=VALUE (to answer a wait_for: --input NAME=VALUE)\n"
        "  (FILE.py and FUNCTION: the script and the function that define nest.outer)\n"
    )
    typed = _advised(err.split(" (to answer")[0], "continue with: ")[1:]
    typed[typed.index("FILE.py:FUNCTION")] = "nest.py:outer"
    assert main([*typed[:-1], "x=5"]) == 0
    assert capsys.readouterr().out.strip() == "11"
