"""An entry of a memo (`_CACHE[k] = compute(k)` under `if k not in
_CACHE`) handed out by `lookup(k)` to a function that changes it
(`fill(lookup(k))` of `def fill(items): items.append(x)`, also through a
local, through a function handing it on, or to `heapq.heappush`): a fresh
process's memo lacks the change, so the step after the replayed one read
what the import left (value 0 for 5). Each is now a changed call,
executing nothing; an entry handed to a function only reading it
(`total(lookup(k))`) resumes as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import COUNTED_WRITE_READ as CASE
from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

HEAD = """import heapq, os
import durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

_CACHE = {}
def compute(k):
    return [0]
def lookup(k):
    if k not in _CACHE:
        _CACHE[k] = compute(k)
    return _CACHE[k]
def fill(items, x):
    items.append(x)
def pass_on(items, x):
    fill(items, x)
def total(items):
    return sum(items)
"""

# name: (step a's body, step b's expression)
CASES = {
    "handed": ("fill(lookup('a'), x)", "sum(lookup('a'))"),
    "keyword": ("fill(x=x, items=lookup('a'))", "sum(lookup('a'))"),
    "local": ("v = lookup('a')\n    pass_on(v, x)", "sum(lookup('a'))"),
    "heap": ("heapq.heappush(lookup('a'), x)", "sum(lookup('a'))"),
}
SAME = {"read": ("x = total(lookup('a')) + x", "sum(lookup('a'))")}

RUN = """
import importlib, durable
for name in {names!r}:
    try:
        print(name, "value", importlib.import_module("s66m_" + name).wf())
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "writes and another step reads" in str(e) else e)
"""


def test_a_memo_entry_handed_to_a_function_changing_it_is_a_write(tmp_path: Path) -> None:
    for n, (w, r) in {**CASES, **SAME}.items():
        (tmp_path / f"s66m_{n}.py").write_text(HEAD + CASE.format(name=n, setup="", write=w, read=r))
    names = [*CASES, *SAME]
    run = RUN.format(names=names)
    first, second = run_each([(tmp_path, run, {"STOP": "1"}), (tmp_path, run, {})])
    assert first.split() == [w for n in names for w in (n, "suspended")], first
    # Was: value 0 for each of CASES (5 uninterrupted).
    assert second.split() == [w for n in CASES for w in (n, "refused")] + ["read", "value", "0"], second
    ran = sorted((tmp_path / "count").read_text().split())
    assert ran == sorted([f"{n}:a" for n in names] + ["read:b"])
