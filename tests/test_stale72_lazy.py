"""A package of your own that loads its submodules when first asked (a
module `__getattr__`, PEP 562, doing `importlib.import_module("." + name,
__name__)`), or one answering from a dict (`{"h": _h}[name]`), used by a
step (`lazy.tools.run(x)`, `lazy2.h(x)`). Looking for the steps a function
runs, durable asked the module for every name the step's code holds
(`count`, `x`, ...): the loader raised ModuleNotFoundError (`No module
named 'lazy72.count'`) or KeyError, and the workflow failed, on the first
run, before the step ran. A name the module's `__getattr__` refuses with
another error than AttributeError is no member of it now, as one it
answers with AttributeError: the run records, resumes in a new process
(the step ran once), and an edit of what the step runs there is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes, forked

FLOW = """
import os, durable
import lazy72, lazy2

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def s(x):
    count("s")
    return lazy72.tools.run(x) + lazy2.h(x)

@durable.workflow(run_id="r1")
def wf(x):
    out = s(x)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""
FILES = {
    "flow.py": FLOW,
    "lazy72/__init__.py": "import importlib\n\ndef __getattr__(name):\n    return importlib.import_module('.' + name, __name__)\n",
    "lazy72/tools.py": "def run(x):\n    return x + 1\n",
    "lazy2.py": "def _h(x):\n    return x * 10\n\ndef __getattr__(name):\n    return {'h': _h}[name]\n",
}
RUN = """
import durable, flow
try:
    print("value", flow.wf(5))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError:
    print("refused then", flow.wf.with_options(on_change="rerun")(5))
"""


def test_a_package_loading_its_submodules_on_first_use_records_and_resumes(tmp_path: Path) -> None:
    folders = {"same": tmp_path / "same", "tools": tmp_path / "tools", "h": tmp_path / "h"}
    for folder in folders.values():
        for name, text in FILES.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)

    def between(name: str, folder: Path) -> dict[str, str]:
        edited = {"tools": ("lazy72/tools.py", "x + 1", "x + 2"), "h": ("lazy2.py", "x * 10", "x * 20")}
        if name in edited:
            file, old, new = edited[name]
            (folder / file).write_text((folder / file).read_text().replace(old, new))
        return {}

    done = twice(folders, RUN, between, first={"STOP": "1"})
    for first, counted, _, _ in done.values():
        assert first.strip() == "suspended", first  # was: ModuleNotFoundError: No module named 'lazy72.count'
        assert counted == ["s"]
    assert done["same"][2].strip() == "value 56" and done["same"][3] == ["s"]  # replayed
    assert done["tools"][2].strip() == "refused then 57" and done["tools"][3] == ["s", "s"]
    assert done["h"][2].strip() == "refused then 106" and done["h"][3] == ["s", "s"]
