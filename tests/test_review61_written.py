"""State of another module of yours that one step changes and the next
reads, both through functions imported from it, neither naming the state:
`from tally import add, total` over its private `_L = []` (`add` appends,
`total` sums), a count its `bump` rebinds with `global`, a registry's
`put`/`get`, an object of your class its `keep` changes by a method
(`_S.remember(x)`), a seeded generator its `draw` draws from
(`_R = random.Random(7)`), an entry of its memo the step changes
(`lookup(k).append(x)`); a generator or an iterator drawn through the
module (`tally.R.random()`, `next(tally.IDS)`); a third module's list
that one module's helper appends to and another's sums
(`from store import L`, or `store.M`). The step's module holds no name of the state,
so the write went unseen: resumed in a new process, the next step read
what the import left (value 0 for 5; the generator's first draw again).
Each is now a changed call, executing nothing; a module whose helpers the
steps only read from, or a memo they only fill, still replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_READ as CASE
from tests.scripts import write_then_read

pytestmark = pytest.mark.slow  # two processes

HEAD = """import os
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""

TALLY = """import itertools, random

_L = []
_REG = {}
N = 0
_R = random.Random(7)
R = random.Random(7)
IDS = itertools.count(1)

def add(x):
    _L.append(x)

def total():
    return sum(_L)

def bump(x):
    global N
    N += x

def get():
    return N

def put(k, v):
    _REG[k] = v

def look(k):
    return _REG.get(k, 0)

def draw():
    return int(_R.random() * 1000)

_CACHE = {}

def compute(k):
    return [0]

def lookup(k):
    if k not in _CACHE:
        _CACHE[k] = compute(k)
    return _CACHE[k]
"""

# name: (module-level setup, step a's body, step b's expression)
CASES = {
    "appended": ("from tally import add, total", "add(x)", "total()"),
    "counted": ("from tally import bump, get", "bump(x)", "get()"),
    "registered": ("from tally import put, look", "put('k', x)", "look('k')"),
    "drawn": ("from tally import draw", "draw()", "draw()"),
    "memo_entry": ("from tally import lookup", "lookup('a').append(x)", "sum(lookup('a'))"),
    # Read through the module the step's module imports as well: `sum(tally._L)`.
    "read_through_module": ("import tally\nfrom tally import add", "add(x)", "sum(tally._L)"),
    # Written by one module's helper, read by another's, the state a third's.
    "third_module": ("from writer import add\nfrom reader import total", "add(x)", "total()"),
    "third_module_attribute": ("from writer import add_to\nfrom reader import total_of", "add_to(x)", "total_of()"),
    # An object of your class there, changed by its method: `_S.remember(x)`.
    "object": ("from keeper import keep, kept", "keep(x)", "kept()"),
    # Drawn through the module: `tally.R.random()`, `next(tally.IDS)`.
    "drawn_through_module": ("import tally", "tally.R.random()", "int(tally.R.random() * 1000)"),
    "next_through_module": ("import tally", "next(tally.IDS)", "next(tally.IDS)"),
}
# Only read, or a memo only filled (by `lookup('b')` alike in a new process): replayed.
SAME = {
    "read_only": ("from tally import total", "total()", "total()"),
    "memo_filled": ("from tally import lookup", "lookup('b')", "sum(lookup('b'))"),
}


# An object of your class, in a module of its own (the steps reaching the
# whole `tally` count its objects by their state).
KEEPER = """class Store:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)

    def total(self):
        return sum(self.items)

_S = Store()

def keep(x):
    _S.remember(x)

def kept():
    return _S.total()
"""
WRITER = """import store
from store import L

def add(x):
    L.append(x)

def add_to(x):
    store.M.append(x)
"""
READER = """import store
from store import L

def total():
    return sum(L)

def total_of():
    return sum(store.M)
"""


def test_state_another_module_keeps_behind_its_helpers_is_counted(tmp_path: Path) -> None:
    (tmp_path / "tally.py").write_text(TALLY)
    (tmp_path / "keeper.py").write_text(KEEPER)
    (tmp_path / "store.py").write_text("L = []\nM = []\n")
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "reader.py").write_text(READER)
    modules = {n: HEAD + CASE.format(name=n, setup=s, write=w, read=r) for n, (s, w, r) in {**CASES, **SAME}.items()}
    second = write_then_read(tmp_path, modules)
    said = dict(line.split(" ", 1) for line in second.splitlines() if line.split(" ")[0] in modules)
    assert said == {**dict.fromkeys(CASES, "refused"), **dict.fromkeys(SAME, "value 0")}, second  # was `value 0` for 5
    ran = (tmp_path / "count").read_text().split()
    assert sorted(ran) == sorted([f"{n}:a" for n in modules] + [f"{n}:b" for n in SAME]), ran
