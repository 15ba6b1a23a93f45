"""An object of your class changed through another object of yours that
holds it, called from a step by attribute: `SVC.store.remember(x)`, where
`store` is a plain attribute or a property handing back `self._store`,
with `SVC = Service(STORE)`; and a dict of bound methods an object keeps
(`self.ops = {"add": self.add}`) called from its method (`CALC.run(x)`
doing `self.ops["add"](x)`). The next step reads `STORE.items` or
`CALC.total`: resumed in a new process, it read what the import left
(value 0 for 5). Each is now a write another step reads: the resume is a
changed call, executing nothing. A method that only reads (`SVC.store.size()`)
is no write: b runs, no refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = '''import os
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

class Store:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)

    def size(self):
        return len(self.items)

class Service:
    def __init__(self, store):
        self._store = store

    @property
    def store(self):
        """The store it was given."""
        return self._store

class Calc:
    def __init__(self):
        self.total = []
        self.ops = {"add": self.add}

    def add(self, x):
        self.total.append(x)

    def run(self, x):
        self.ops["add"](x)

STORE = Store()
SVC = Service(STORE)
CALC = Calc()
'''

# name: (step a's body, step b's expression)
CASES = {
    "plain": ("SVC._store.remember(x)", "sum(STORE.items)"),
    "property": ("SVC.store.remember(x)", "sum(STORE.items)"),
    "ops": ("CALC.run(x)", "sum(CALC.total)"),
}
SAME = {"size": ("SVC.store.size()", "sum(STORE.items)")}

CASE = """
@durable.step
def a(x):
    count("{name}:a")
    {write}
    return x

@durable.step
def b(x):
    count("{name}:b")
    return {read} + x

@durable.workflow(run_id="r-{name}")
def wf():
    a(5)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return b(0)
"""

RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("s65_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "which a writes and another step reads" in str(e) else e)
"""


def test_an_object_changed_through_one_holding_it_is_written(tmp_path: Path) -> None:
    names = [*CASES, *SAME]
    for n, (w, r) in {**CASES, **SAME}.items():  # a module each: what one writes is no other's change
        (tmp_path / f"s65_{n}.py").write_text(HEAD + CASE.format(name=n, write=w, read=r))
    run = RUN.format(names=names)
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in names for w in (n, "suspended")], first
    # Was: value 0 for plain, property and ops (5 uninterrupted).
    assert second.split() == [w for n in CASES for w in (n, "refused")] + ["size", "value", "0"], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in names] + ["size:b"])
