"""Globals whose module-level statements read each other (`B = [A, 2]`,
`C = [A, B, 3]`, ...) are each reached many times while one function is
analysed. Their statements are looked up and hashed once per analysis:
before, the lookups grew with the square of such a table's size (the
tests' own modules, read by the steps they define, took seconds of CPU).
What counts is unchanged: an edit of any statement the chain reads is a
change, of any other line is not."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

import pytest

from durable._fingerprint import reads
from durable._fingerprint.fingerprint import fingerprint_function

TABLES = """
A = [1]
B = [A, 2]
C = [A, B, 3]
D = [A, B, C, 4]
E = [A, B, C, D, 5]
NOTE = "unrelated"

def total():
    return len(E) + len(D) + len(C) + len(B) + len(A)
"""


def test_each_globals_statements_are_looked_up_once_per_analysis(
    load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: Counter[str] = Counter()
    lookup = reads.binding_statements

    def counted(name: str, *args: Any) -> Any:
        asked[name] += 1
        return lookup(name, *args)

    fingerprint_function(load("tables_once", TABLES).total)  # what a first analysis imports, imported
    monkeypatch.setattr(reads, "binding_statements", counted)
    fingerprint_function(load("tables_once", TABLES).total)
    assert asked == {"A": 1, "B": 1, "C": 1, "D": 1, "E": 1}  # before: A 5, B 4, C 3, D 2 times


def test_each_globals_contents_are_read_once_per_analysis(load: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a global holds now (`contents_part`) is read once for each way it is reached."""
    asked: Counter[tuple[str, bool]] = Counter()
    contents = reads.contents_part

    def counted(name: str, *args: Any, running: bool) -> Any:
        asked[name, running] += 1
        return contents(name, *args, running=running)

    fingerprint_function(load("tables_contents", TABLES).total)  # what a first analysis imports, imported
    monkeypatch.setattr(reads, "contents_part", counted)
    fingerprint_function(load("tables_contents", TABLES).total)
    assert max(asked.values()) == 1 and {name for name, _ in asked} == {"A", "B", "C", "D", "E"}  # A 4 times


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("A = [1]", "A = [7]", True),
        ("C = [A, B, 3]", "C = [A, B, 8]", True),
        ('NOTE = "unrelated"', 'NOTE = "edited"', False),
    ],
)
def test_an_edit_along_the_chain_is_a_change_and_of_another_line_is_not(
    load: Any, old: str, new: str, changed: bool
) -> None:
    before = fingerprint_function(load("tables_edit", TABLES).total)
    after = fingerprint_function(load("tables_edit", TABLES.replace(old, new)).total)
    assert (after.value != before.value) is changed



LOADED = """
def made(n):
    return [n]

A = made(1)
B = [A, made(2)]
C = [A, B, made(3)]
D = [A, B, C, made(4)]
"""


def test_each_call_a_globals_statements_make_is_followed_once_per_pass(
    load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether `made(...)` reads a file or the environment was asked again
    for each statement calling it, each time the statement was reached (a
    dataclass argument's class took 9.9 s of CPU): answered once a pass."""
    from durable._fingerprint import outside
    from durable._fingerprint.passes import one_pass

    module = load("loaded_once", LOADED)
    statements = ast.parse(LOADED).body[1:]
    asked: Counter[tuple[str, ...]] = Counter()
    follow = outside._calls_outside

    def counted(chain: tuple[str, ...], *args: Any) -> Any:
        asked[chain] += len(args) == 2  # a call a statement makes, not one in a body it follows
        return follow(chain, *args)

    monkeypatch.setattr(outside, "_calls_outside", counted)
    with one_pass():
        found = [outside.reads_outside([s], vars(module), module.__file__) for s in statements]
    assert found == [False] * 4
    assert asked == {("made",): 1}  # before: 10


def test_whether_a_global_is_made_from_outside_is_answered_once_per_pass(
    load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ownpath.chosen_outside` is asked for each way a name is reached."""
    from durable._fingerprint import ownpath
    from durable._fingerprint.passes import one_pass

    module = load("chosen_once", LOADED)
    asked: list[int] = []
    scan = ownpath.reads_outside

    def counted(*args: Any) -> Any:
        asked.append(1)
        return scan(*args)

    monkeypatch.setattr(ownpath, "reads_outside", counted)
    with one_pass():
        found = [ownpath.chosen_outside("D", vars(module), module.__file__) for _ in range(3)]
    assert found == [False] * 3 and len(asked) == 1  # before: 3


def test_a_class_an_argument_is_made_of_is_read_in_one_pass(load: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The class of an argument (a dataclass: `Point(1)`) counts by its code,
    read as a step's is, in one pass: each question answered once (the
    class statement's globals were followed again for each way they were
    reached: 9.9 s of CPU for test_identity_engine's Point)."""
    from durable._core.code import class_stamp
    from durable._fingerprint import outside

    module = load("classy_once", LOADED + "\n\nclass Point:\n    x = len(D)\n\n    def get(self):\n        return self.x\n")
    asked: Counter[tuple[str, ...]] = Counter()
    follow = outside._calls_outside

    def counted(chain: tuple[str, ...], *args: Any) -> Any:
        asked[chain] += len(args) == 2
        return follow(chain, *args)

    monkeypatch.setattr(outside, "_calls_outside", counted)
    assert class_stamp(module.Point) is not None
    assert asked[("made",)] == 1, asked
