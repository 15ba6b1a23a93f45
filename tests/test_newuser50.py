"""The 50th new-user walk: a notebook importing a script's module saw none
of the runs `python flow.py` made; `wf.resume("r1", "yes")` and `wf.fork("r1")`
gave Python's bare TypeError; `durable show r1 --html` with no file said
only "expected one argument"."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import durable
from durable._cli.main import main

FLOW = """\
import durable


def note(what: str) -> None:
    with open("counts", "a") as f:
        f.write(what + "\\n")


@durable.step
def fetch(x: int) -> int:
    note("fetch")
    return 2 * x


@durable.workflow
def wf50(x: int = 3) -> int:
    return fetch(x) + 1


@durable.workflow(run_id=lambda day, n: f"report-{day}")
def report50(day: str, n: int) -> int:
    return fetch(n)
"""


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_STORE", str(tmp_path / "store"))
    (tmp_path / "flow50.py").write_text(FLOW)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("flow50", None)


def test_an_import_of_a_scripts_module_lists_the_runs_the_script_made(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `flow50.wf50.runs()` in a notebook was [] after `durable run
    flow50.py:wf50` (as `python flow50.py`) recorded r1 under `flow50.wf50`."""
    assert main(["run", "flow50.py:wf50", "--run-id", "r1"]) == 0
    module = importlib.import_module("flow50")
    wf = module.wf50
    runs = wf.runs()
    assert [(r.workflow, r.run_id, r.status) for r in runs] == [("flow50.wf50", "r1", "completed")], runs
    assert wf.run(4).value == 9  # the import's own run, under its own name, listed first
    assert [(r.workflow, r.run_id) for r in wf.runs()] == [("wf50", "wf50-" + wf.runs()[0].run_id[5:]),
                                                           ("flow50.wf50", "r1")]  # fmt: skip
    assert [(h.name, h.status) for h in wf.history("r1")][-1:] == [("fetch", "completed")]  # read, as listed
    resumed = wf.resume("r1")  # the script's run, continued the other way (one identity): completed
    assert (resumed.workflow, resumed.status, resumed.steps_executed) == ("flow50.wf50", "completed", 0)
    with pytest.raises(durable.RunNotFoundError, match=r"exists under workflow 'flow50\.wf50'"):
        wf.delete("r1")  # nor removed through the other name
    assert wf.with_options().runs() == wf.runs()
    assert [r.workflow for r in durable.workflow(name="pinned")(module.wf50.fn).runs()] == []
    capsys.readouterr()
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert "flow50.wf50" in listing and " r1 " in listing and "wf50-" in listing, listing
    assert (flow / "counts").read_text().split() == ["fetch", "fetch"]


def test_resume_and_fork_given_what_they_do_not_take_say_what_they_take(flow: Path) -> None:
    """Before: "Workflow.resume() takes 2 positional arguments but 3 were
    given", and fork's "missing 1 required positional argument: 'at'"."""
    wf = importlib.import_module("flow50").wf50
    wf.with_options(run_id="r2")(5)
    with pytest.raises(TypeError, match=r"resume\(\) takes the run id, then keywords") as e:
        wf.resume("r2", "yes")
    assert "wf50.resume('r2', x=...)" in str(e.value) and "inputs=" in str(e.value), e.value
    with pytest.raises(TypeError, match=r"fork\(\) takes the run id and at=POSITION") as e:
        wf.fork("r2")
    assert wf.resume("r2").value == 11  # a right call is untouched
    assert (flow / "counts").read_text().split() == ["fetch"]


def test_show_html_without_a_file_says_what_to_pass(
    flow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "argument --html: expected one argument", naming no file."""
    with pytest.raises(SystemExit):
        main(["show", "r1", "--html"])
    err = capsys.readouterr().err
    assert "--html takes FILE" in err and "durable show r1 --html FILE" in err.replace("-m durable", "durable"), err


def test_a_refused_run_whose_id_run_id_made_says_so_and_from_what(flow: Path) -> None:
    """Before: "run 'report-mon' ... completed with other arguments than this
    call's ... use another run id", of an id the user never gave: the
    workflow's `run_id=lambda day, n: f"report-{day}"` made it, n left out."""
    report = importlib.import_module("flow50").report50
    assert report("mon", 1) == 2
    with pytest.raises(durable.DefinitionChangedError) as e:
        report("mon", 2)
    said = str(e.value)
    assert "  - n: 1 -> 2" in said, said
    assert said.endswith(
        "The run id 'report-mon' was not given: the workflow's run_id= function made it from "
        "this call's arguments (day='mon', n=2). n differs from the run's, yet the id is the same: "
        "make run_id= read it too, so that such calls are runs of their own, or give this call "
        "its own id with with_options(run_id='...')."
    ), said
    given = report.with_options(run_id="report-mon")
    with pytest.raises(durable.DefinitionChangedError) as e:
        given("mon", 2)  # an id given: nothing to add
    assert "run_id= function" not in str(e.value)
    spaced = report.with_options(run_id=lambda day, n: f"report {day}")
    with pytest.raises(durable.ConfigurationError, match=r"^the run_id= function of report50, given "
                       r"this call's arguments, gave invalid run id 'report mon': it must"):  # fmt: skip
        spaced("mon", 1)  # was: "invalid run id 'report mon'", an id nobody typed
    assert (flow / "counts").read_text().split() == ["fetch"]


WRITES = """\
import durable

STATE = {"k": 0}


@durable.step
def put(x: int) -> int:
    with open("counts", "a") as f:
        f.write("put\\n")
    STATE["k"] = x
    return x


@durable.step
def get() -> int:
    return STATE["k"]


@durable.workflow
def kept50(x: int) -> int:
    put(x)
    durable.suspend("wait")
    return get()
"""


def test_a_refusal_for_a_write_another_step_reads_names_it_first(flow: Path) -> None:
    """Before: the refusal opened "the record at position 0 was made by a
    call with other arguments: - put: arguments changed: called now as
    put(5) ...", the arguments the same, and only its last sentence named
    STATE, which put writes and get reads, as the import left it."""
    (flow / "written50.py").write_text(WRITES)
    module = importlib.import_module("written50")
    try:
        with pytest.raises(durable.Suspended):
            module.kept50.with_options(run_id="w1")(5)
        module.STATE["k"] = 0  # as a new process's import leaves it
        with pytest.raises(durable.DefinitionChangedError) as e:
            module.kept50.resume("w1")
    finally:
        sys.modules.pop("written50", None)
    lines = str(e.value).splitlines()
    assert lines[0] == "run 'w1' of 'kept50': the record at position 0 is not the call made there now " \
        "(what a step wrote, or its arguments):", lines  # fmt: skip
    assert lines[1].startswith("  - put: STATE, which put writes and another step reads, is not as put left it"), lines
    assert "Or its arguments changed: called now as put(5)" in lines[1], lines
    assert (flow / "counts").read_text().split() == ["put"]
