"""A step that looks at another module through `sys.modules` (`"json" in
sys.modules`, `sys.modules.get("json")`, `importlib.import_module("json")`)
while another step of its module appends to a module-level list it never
reads. review49 took any `.modules` or `.import_module` for a read through
the step's own module's namespace (`sys.modules[__name__].LOG`), so the
appending step counted as writing what that step reads and every resume in
a new process was refused ("arguments changed ... Or LOG"). A membership
test reads no namespace; a standard library module named by a string is
not the user's module. `sys.modules[__name__]` still reads it
(tests/test_review49_written.py)."""

from __future__ import annotations

import pytest

from tests.scripts import suspend_then_resume

pytestmark = pytest.mark.slow  # one interpreter forking the phases

FLOW = """
import importlib, os, sys, durable
LOG = []

@durable.step
def a(x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("a\\n")
    LOG.append(x)
    return x

@durable.step
def b():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("b\\n")
    return {ret}

@durable.workflow(run_id="r1")
def wf():
    a(1)
    a(2)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b()
"""
CASES = {
    "membership": "int('json' in sys.modules)",
    "not_in": "int('json' not in sys.modules)",
    "get_stdlib": "int(sys.modules.get('json') is None)",
    "import_stdlib": "len(importlib.import_module('json').dumps([]))",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str, list[str]]]:
    folders = {}
    for name, ret in CASES.items():
        folders[name] = folder = tmp_path_factory.mktemp("modules")
        (folder / "flow.py").write_text(FLOW.format(ret=ret))
    return suspend_then_resume(folders)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_step_looking_at_another_module_reads_no_global_of_its_own(
    runs: dict[str, tuple[str, str, list[str]]], name: str
) -> None:
    first, resumed, count = runs[name]
    assert "suspended" in first, first
    # was: refused, "arguments changed ... Or LOG, which a writes"
    assert "value" in resumed and count == ["a", "a", "b"], (resumed, count)
