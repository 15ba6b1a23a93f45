"""A workflow of flow.py started as `python flow.py` was identified as
`flow.py:wf` and stored as `flow.wf`; imported (`import flow`), as `flow.wf`
and stored as `wf`: a resume the other way found no run and started afresh,
running the finished steps again. The script's functions are now
identified by the name an import gives them when it has one (`flow.wf`:
`scriptnames.importable`), and a call that finds no run under its own name
continues the one under the other (`naming.started_other_way`) only when
that run's manifest says this identity made it: another function's run
under that name is never continued."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._manage.runs import list_runs
from tests.scripts import run_each, run_in

FLOW = """
import os, signal, durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def a(n):
    count("a")
    return n

@durable.step
def b(n):
    count("b")
    if os.environ.get("KILL") and not os.path.exists("died"):
        open("died", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return n * 10

@durable.workflow
def wf(n):
    return a(n) + b(n)

if __name__ == "__main__":
    print("value", wf(5))
"""

IMPORTED = "import flow; print('value', flow.wf(5))"

pytestmark = pytest.mark.slow


def _counts(folder: Path) -> list[str]:
    return (folder / "count").read_text().split()


def _folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "flow.py").write_text(FLOW)
    return folder


def test_a_run_started_one_way_resumes_the_other(tmp_path: Path) -> None:
    script, imported = _folder(tmp_path, "script"), _folder(tmp_path, "imported")
    assert run_in(script, "flow.py", KILL="1") == ""  # killed in b
    assert run_each([(imported, IMPORTED, {"KILL": "1"})]) == [""]
    assert run_each([(script, IMPORTED, {})]) == ["value 55\n"]
    assert run_in(imported, "flow.py") == "value 55\n"
    for folder in (script, imported):
        assert _counts(folder) == ["a", "b", "b"]  # a once; b again where it was killed
    assert run_in(script, "flow.py") == "value 55\n"  # completed: its result, nothing runs
    assert _counts(script) == ["a", "b", "b"]
    listed = list_runs(durable.open_store(str(script / "store")))
    assert [i.workflow for i in listed] == ["flow.wf"]  # one run, where it was started


def test_another_function_s_run_under_that_name_is_not_continued(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "other")
    store = durable.open_store(str(folder / "store"))

    @durable.step
    def other(n: int) -> int:
        return -n

    @durable.workflow(store=store)
    def wf(n: int) -> int:  # named `wf` as flow's is when imported: its run id too
        return other(n)

    assert wf(5) == -5
    assert run_in(folder, "flow.py") == "value 55\n"
    assert _counts(folder) == ["a", "b"]  # nothing of the other run replayed
