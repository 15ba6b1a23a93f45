"""Modules chosen by a name held in data: `MODS = {"p": "plugmod"}` read by
a step that calls `importlib.import_module(MODS["p"]).run(x)` (itself or
through a helper), and a Hydra-like `locate("plugmod.run")` whose string is
the step's while the import happens in a helper
(`importlib.import_module(path.rpartition(".")[0])`). The string names a
module of the user's, but no statement imported it: counted without it, an
edit of `plugmod.run` replayed the output its old code computed. Each case
runs twice in a process of its own, `plugmod.py` edited between the runs
(refused); a step doing them all, not edited, replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

PLUGMOD = """
def run(x):
    return x * 7
"""

LOADER = """
import importlib

def locate(path):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)

def load(name):
    return importlib.import_module(name)
"""

HEAD = """
import importlib, pkgutil
import loader
MODS = {"p": "plugmod"}
TARGET = "plugmod.run"

def helper(x):
    return importlib.import_module(MODS["p"]).run(x)
"""

# name: what the step returns.
CASES = {
    "import_module_of_data": 'importlib.import_module(MODS["p"]).run(x)',
    "helper_imports_data": "helper(x)",
    "dunder_import": '__import__(MODS["p"]).run(x)',
    "resolve_name": 'pkgutil.resolve_name("plugmod:run")(x)',
    "locate_in_helper": 'loader.locate("plugmod.run")(x)',
    "locate_global_string": "loader.locate(TARGET)(x)",
    "load_in_helper": 'loader.load(MODS["p"]).run(x)',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bodies = {name: f"return {reads}" for name, reads in CASES.items()}
    bodies["same"] = f"return [{', '.join(CASES.values())}]"
    folders = {}
    for name, body in bodies.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=HEAD, body=body))
        (folder / "loader.py").write_text(LOADER)
        (folder / "plugmod.py").write_text(PLUGMOD)
        folders[name] = folder

    def between(name: str, folder: Path) -> dict[str, str]:
        if name != "same":
            (folder / "plugmod.py").write_text(PLUGMOD.replace("x * 7", "x * 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_module_named_by_a_string_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_modules_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert f"value {[70] * len(CASES)}" in second and after == ["s"], second
