"""A global made at import from what lies outside the source, by a reader
durable did not know: packaged data (`pkgutil.get_data`), a database's rows
read by iterating a cursor, a tool's output (`subprocess.check_output`,
`subprocess.run(...).stdout`), pydantic-settings' `BaseSettings` (the
environment), a jinja template loaded by name (`get_template`) or made
from a file's text (`Template(Path(p).read_text())`, next to its module's
`__file__` too), whose attributes are the same whatever the file said, a loader of the user's that opens the file in a function it
calls in turn (`cls._load(path)` in a class method, `self._read(path)` in
`__init__`, of a class imported from another module). The statement's text is the same whatever it read, so counted
by it alone a resume replayed the output computed with the old value. Each
case runs twice in a process of its own: once edited between the runs
(refused), once not (replayed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, twice

pytestmark = pytest.mark.slow



# A loader that opens the file in a function it calls in turn.
LOADER = """
import json

def _read(path):
    with open(path) as f:
        return json.load(f)

def load_config():
    return _read("pkg/w.json")

class Model:
    def __init__(self, path):
        self.k = self._read(path)["k"]

    def _read(self, path):
        return _read(path)

class Rates:
    def __init__(self, k):
        self.k = k

    @classmethod
    def _load(cls, path):
        return _read(path)

    @classmethod
    def from_file(cls, path):
        return cls(cls._load(path)["k"])
"""

# A template read next to its module's file: it keeps no trace of its text.
PROMPTS = """
from pathlib import Path
import jinja2

PROMPT = jinja2.Template((Path(__file__).parent / "pkg" / "w.json").read_text())
"""

# name: (the statement making W, what the step computes with, the file holding K)
CASES = {
    "get_data": ('import json, pkgutil\nW = json.loads(pkgutil.get_data("pkg", "w.json"))', 'W["k"]', "pkg/w.json"),
    "cursor": ('import sqlite3\nW = dict(sqlite3.connect("k.db").execute("select k, v from t"))', 'W["k"]', None),
    "check_output": ('import subprocess\nW = subprocess.check_output(["cat", "k.txt"]).split()', "int(W[0])", "k.txt"),
    "run_stdout": (
        'import subprocess\nW = subprocess.run(["cat", "k.txt"], capture_output=True, text=True).stdout.split()',
        "int(W[0])",
        "k.txt",
    ),
    "loader": ("from loader import load_config\nW = load_config()", 'W["k"]', "pkg/w.json"),
    "init_reads": ('from loader import Model\nW = Model("pkg/w.json")', "W.k", "pkg/w.json"),
    "from_file": ('from loader import Rates\nW = Rates.from_file("pkg/w.json")', "W.k", "pkg/w.json"),
    "template": (
        'import json, jinja2\nW = jinja2.Environment(loader=jinja2.FileSystemLoader("pkg")).get_template("w.json")',
        'json.loads(W.render())["k"]',
        "pkg/w.json",
    ),
    "template_text": (
        'import json, jinja2\nfrom pathlib import Path\nW = jinja2.Template(Path("pkg/w.json").read_text())',
        'json.loads(W.render())["k"]',
        "pkg/w.json",
    ),
    "template_here": ("import json\nfrom prompts import PROMPT as W", 'json.loads(W.render())["k"]', "pkg/w.json"),
    "settings": (
        "from pydantic_settings import BaseSettings\n\nclass Settings(BaseSettings):\n    k: int = 1\n\nW = Settings()",
        "W.k",
        None,
    ),
}


def _write_k(folder: Path, name: str, k: int) -> dict[str, str]:
    """K where the case reads it: its file, its database or the environment."""
    held = CASES[name][2]
    if held is not None:
        (folder / held).write_text(f'{{"k": {k}}}' if held.endswith(".json") else f"{k}\n")
    elif name == "cursor":
        with sqlite3.connect(folder / "k.db") as db:
            db.execute("create table if not exists t (k text, v int)")
            db.execute("delete from t")
            db.execute("insert into t values ('k', ?)", (k,))
        db.close()
    return {"K": str(k)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, (head, reads, _) in CASES.items():
        for edited in (True, False):
            folder = tmp_path_factory.mktemp(name)
            (folder / "pkg").mkdir()
            (folder / "pkg" / "__init__.py").write_text("")
            (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body=f"return x * {reads}"))
            (folder / "loader.py").write_text(LOADER)
            (folder / "prompts.py").write_text(PROMPTS)
            _write_k(folder, name, 2)
            folders[f"{name}:{'edited' if edited else 'same'}"] = folder

    def between(label: str, folder: Path) -> dict[str, str]:
        name, how = label.split(":")
        return _write_k(folder, name, 3 if how == "edited" else 2)

    return twice(folders, RUN_FLOW, between, {"STOP": "1", "K": "2"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_read_from_outside_by_another_reader_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:edited"]
    assert "suspended" in first and count == ["s"], first
    assert "refused" in second and "W changed" in second, second  # was `value 20`
    assert after == ["s"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_value_read_again_replays(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:same"]
    assert "suspended" in first and count == ["s"], first
    assert "value 20" in second and after == ["s"], second
