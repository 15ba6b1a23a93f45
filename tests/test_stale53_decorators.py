"""A user's decorator factory whose argument is read when the module is
imported (`@scaled(json.load(open("cfg.json"))["f"])`, `@scaled(int(
os.environ["F"]))`), its wrapper made with `functools.wraps`, stacked
under `@durable.step` or over a helper the step calls; the config edited
between two runs, each a process of its own (`twice`).

The fingerprint follows `__wrapped__` to the user's function, whose
decorator line reads the same whatever the file or variable holds; the
factor lives only in the wrapper's closure, which was not counted: each
resume replayed the old output (`value 60` where the code now computes 80).
The same code and config, unchanged, replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, SUSPENDING_WF, refused_after_edit, twice

pytestmark = pytest.mark.slow

DECO = """
import functools

def scaled(by):
    def deco(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            return fn(*a, **k) * by
        return inner
    return deco
"""

HEAD = """
import json, os, durable
from deco import scaled

def helper(x):
    return x * 2
"""

COUNTED = """
    with open(os.environ["COUNT_FILE"], "a") as out:
        out.write("s\\n")
"""

FROM_FILE = '@scaled(json.load(open("cfg.json"))["f"])\n'
FROM_ENV = '@scaled(int(os.environ["F"]))\n'

FLOWS = {
    # The step's own function wrapped: `@durable.step` over `@scaled(...)`.
    "file": HEAD + "\n@durable.step\n" + FROM_FILE + "def s(x):" + COUNTED + "    return x * 2\n",
    "env": HEAD + "\n@durable.step\n" + FROM_ENV + "def s(x):" + COUNTED + "    return x * 2\n",
    # A helper the step calls wrapped so.
    "helper": HEAD.replace("def helper", FROM_FILE + "def helper")
    + "\n@durable.step\ndef s(x):" + COUNTED + "    return helper(x)\n",
    "same": HEAD + "\n@durable.step\n" + FROM_FILE + "def s(x):" + COUNTED + "    return x * 2\n",
}


def test_a_decorator_argument_read_at_import_counts(tmp_path: Path) -> None:
    folders = {}
    for name, flow in FLOWS.items():
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(flow + SUSPENDING_WF)
        (place / "deco.py").write_text(DECO)
        (place / "cfg.json").write_text('{"f": 3}')

    def between(name: str, place: Path) -> dict[str, str]:
        if name in ("file", "helper"):
            (place / "cfg.json").write_text('{"f": 4}')
        return {"F": "4" if name == "env" else "3"}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1", "F": "3"})
    for name in ("file", "env", "helper"):
        refused_after_edit(runs[name])
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 60" in second and count == after == ["s"], second
