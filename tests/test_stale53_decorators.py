"""A user's decorator factory whose argument is read when the module is
imported (`@scaled(json.load(open("cfg.json"))["f"])`, `@scaled(int(
os.environ["F"]))`, `@scaled_by(Cfg.load("cfg.json"))`), its wrapper made
with `functools.wraps` (or an instance of the user's class given to
`update_wrapper`), stacked under `@durable.step` or over a helper the step
calls; the config edited between two runs, each a process of its own
(`twice`).

The fingerprint follows `__wrapped__` to the user's function, whose
decorator line reads the same whatever the file or variable holds; the
factor lives only in the wrapper's closure (or attributes), which was not
counted: each resume replayed the old output (`value 60` where the code
now computes 80). The same code and config, unchanged, replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, SUSPENDING_WF, refused_after_edit, twice

pytestmark = pytest.mark.slow

DECO = """
import functools, json

def scaled(by):
    def deco(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            return fn(*a, **k) * by
        return inner
    return deco

class Cfg:
    def __init__(self, f):
        self.f = f

    @classmethod
    def load(cls, path):
        return cls(json.load(open(path))["f"])

def scaled_by(cfg):
    def deco(fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            return fn(*a, **k) * cfg.f
        return inner
    return deco

class Scaled:
    def __init__(self, fn, by):
        functools.update_wrapper(self, fn)
        self.fn, self.by = fn, by

    def __call__(self, *a, **k):
        return self.fn(*a, **k) * self.by
"""

HEAD = """
import json, os, durable
from deco import Cfg, Scaled, scaled, scaled_by

def helper(x):
    return x * 2
"""

COUNTED = """
    with open(os.environ["COUNT_FILE"], "a") as out:
        out.write("s\\n")
"""

FROM_FILE = '@scaled(json.load(open("cfg.json"))["f"])\n'
FROM_ENV = '@scaled(int(os.environ["F"]))\n'
FROM_OBJECT = '@scaled_by(Cfg.load("cfg.json"))\n'
AN_INSTANCE = '@lambda fn: Scaled(fn, json.load(open("cfg.json"))["f"])\n'

FLOWS = {
    # The step's own function wrapped: `@durable.step` over `@scaled(...)`.
    "file": HEAD + "\n@durable.step\n" + FROM_FILE + "def s(x):" + COUNTED + "    return x * 2\n",
    "env": HEAD + "\n@durable.step\n" + FROM_ENV + "def s(x):" + COUNTED + "    return x * 2\n",
    "object": HEAD + "\n@durable.step\n" + FROM_OBJECT + "def s(x):" + COUNTED + "    return x * 2\n",
    "instance": HEAD + "\n@durable.step\n" + AN_INSTANCE + "def s(x):" + COUNTED + "    return x * 2\n",
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
        if name in ("file", "helper", "object", "instance"):
            (place / "cfg.json").write_text('{"f": 4}')
        return {"F": "4" if name == "env" else "3"}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1", "F": "3"})
    for name in ("file", "env", "helper", "object", "instance"):
        refused_after_edit(runs[name])
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 60" in second and count == after == ["s"], second



HELPERS = """
import json

class Doubler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k

double = Doubler(json.load(open("cfg.json"))["f"])
"""

MODELS = """
import json

def set_k(cls):
    cls.K = json.load(open("cfg.json"))["f"]
    return cls

@set_k
class Model:
    def run(self, x):
        return x * self.K
"""

BASES = """
import json

class Base:
    def __init_subclass__(cls, **kw):
        cls.K = json.load(open("cfg.json"))["f"]

class Model(Base):
    def run(self, x):
        return x * self.K
"""


def test_a_helpers_value_made_from_a_file_counts(tmp_path: Path) -> None:
    # `double(x)`: an instance of the user's class with `__call__`, made at
    # import from a config file, counted as a function is (by its class's
    # code and its statement), not by what it holds; `Model().run(x)`
    # reading `self.K` that a class decorator (or its base's
    # `__init_subclass__`) set from the file, counted by the class statement
    # alone: each resume replayed `value 30`.
    flow = "import os, durable\nimport bases\nfrom helpers import double\nfrom models import Model\n\n@durable.step\ndef s(x):"
    calls = {"callable": "double(x)", "decorated": "Model().run(x)", "subclass": "bases.Model().run(x)"}
    calls["same"] = "double(x) + Model().run(x) - bases.Model().run(x)"
    folders = {}
    for name, call in calls.items():
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(flow + COUNTED + f"    return {call}\n" + SUSPENDING_WF)
        (place / "helpers.py").write_text(HELPERS)
        (place / "models.py").write_text(MODELS)
        (place / "bases.py").write_text(BASES)
        (place / "cfg.json").write_text('{"f": 3}')

    def between(name: str, place: Path) -> dict[str, str]:
        if name != "same":
            (place / "cfg.json").write_text('{"f": 4}')
        return {}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1"})
    refused_after_edit(runs["callable"])
    refused_after_edit(runs["decorated"])
    refused_after_edit(runs["subclass"])
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 30" in second and count == after == ["s"], second
