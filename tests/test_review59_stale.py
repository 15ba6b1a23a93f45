"""Values a step changed that a resume in a new process replayed without
the change, so that the next step read what the import left (value 0 for
5, where an uninterrupted run gives 5), or a plugin's edit it replayed
past (value 20 for 30):

- `Box(LOG).add(x)`: a global handed to the constructor of your class,
  kept on `self` (`self.log = log`) and changed by a method
  (`self.log.append(x)`); a dataclass's field alike;
- `next(iter(G.values())).append(x)`: an item drawn from a global;
- `lookup(k).append(x)`: an entry of a memo (`_CACHE[k] = compute(k)`)
  handed out and changed by its caller, which a fresh process's memo lacks;
- a plugin loaded from a path the step is given
  (`spec_from_file_location(name, path)`, `exec_module`): the file edited.

Each is now a changed call, executing nothing. Still no refusal: a
`Client(CONFIG)` only reading what it keeps, a memo whose entries callers
only read, the plugin's file unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_READ as CASE
from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import dataclasses, importlib.util, os
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""

BOX = """LOG = []
class Box:
    def __init__(self, log):
        self.log = log
    def add(self, x):
        self.log.append(x)"""
FIELD = """LOG = []
@dataclasses.dataclass
class Box:
    log: list
    def add(self, x):
        self.log.append(x)"""
CLIENT = """CONFIG = {"w": 0}
class Client:
    def __init__(self, cfg):
        self.cfg = cfg
        self.calls = []
    def get(self, x):
        self.calls.append(x)
        return self.cfg["w"] * x"""

CLIENT_FIELD = """CONFIG = {"w": 0}
@dataclasses.dataclass
class Client:
    cfg: dict
    calls: int = 0
    def get(self, x):
        self.calls += 1
        return self.cfg["w"] * x"""


def _memo(use: str) -> str:
    return f"""_CACHE = {{}}
def compute(k):
    return [0]
def lookup(k):
    if k not in _CACHE:
        _CACHE[k] = compute(k)
    return _CACHE[k]
def use(x):
    {use}"""


# name: (module-level setup, step a's body, step b's expression)
CASES = {
    "box": (BOX, "Box(LOG).add(x)", "sum(LOG)"),
    "field": (FIELD, "Box(LOG).add(x)", "sum(LOG)"),
    "item": ("G = {'k': []}", "next(iter(G.values())).append(x)", "sum(G['k'])"),
    "memo": (_memo("lookup('a').append(x)"), "use(x)", "sum(lookup('a'))"),
    "memo_local": (_memo("v = lookup('a')\n    v[0] = x"), "use(x)", "sum(lookup('a'))"),
}
SAME = {
    "client": (CLIENT, "Client(CONFIG).get(x)", "CONFIG['w']"),
    "client_field": (CLIENT_FIELD, "Client(CONFIG).get(x)", "CONFIG['w']"),
    "memo_read": (_memo("return lookup('a')[0] + x"), "use(x)", "sum(lookup('a'))"),
}


PLUGIN = """
@durable.step
def run_plugin(path, x):
    count("plugin")
    spec = importlib.util.spec_from_file_location("plug", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run(x)

@durable.workflow(run_id="r-plugin")
def wf():
    out = run_plugin(os.path.join("plugins", os.environ.get("PLUGIN", "p") + ".py"), 10)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out
"""

RUN = """
import importlib, os, sys, durable
if os.environ.get("TIMES"):  # the user's edit of the plugin, before this process runs it
    with open("plugins/p.py", "w") as f:
        f.write("def run(x):\\n    return x * " + os.environ["TIMES"] + "\\n")
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("r59_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) or "plugins" in str(e) else e)
"""


def test_values_kept_drawn_or_memoised_and_a_plugin_by_path_are_counted(tmp_path: Path) -> None:
    for n, (s, w, r) in {**CASES, **SAME}.items():
        (tmp_path / f"r59_{n}.py").write_text(HEAD + CASE.format(name=n, setup=s, write=w, read=r))
    (tmp_path / "r59_plugin.py").write_text(HEAD + PLUGIN)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "p.py").write_text("def run(x):\n    return x * 2\n")
    names = [*CASES, *SAME, "plugin"]
    run = RUN.format(names=names)
    jobs = [
        (tmp_path, run, {"STOP": "1"}),
        (tmp_path, run, {"TIMES": "3"}),
        (tmp_path, RUN.format(names=["plugin"]), {"TIMES": "2"}),
    ]
    first, second, third = run_each(jobs)
    assert first.split() == [w for n in names for w in (n, "suspended")], first
    # Was: value 0 for each of CASES, value 20 for the plugin.
    expected = (
        [w for n in CASES for w in (n, "refused")]
        + [w for n in SAME for w in (n, "value", "0")]
        + ["plugin", "refused"]
    )
    assert second.split() == expected, second
    assert third.split() == ["plugin", "value", "20"], (
        third
    )  # the file as it was: the same call, replayed
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted(
        [f"{n}:a" for n in [*CASES, *SAME]] + [f"{n}:b" for n in SAME] + ["plugin"]
    )
