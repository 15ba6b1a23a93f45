"""Registries the fingerprint did not look into (review42, after stale43):
one holding weak references (`REG[name] = weakref.ref(obj)`, so that it
keeps no class or function alive) and one keyed by tuples holding the
classes it registers (`REG[(cls, "json")] = name`, a dispatch table by
type and format), and an object of a class with `__slots__` holding the
registry (`registry.get(name)`, `LOOKUP = registry.get`). A decorator in `plugins.py` fills each; a step reads
one (`REG["P"]()().run(x)`). Counted by the registry's statements alone,
an edit of the plugin replayed the output its old code computed. Each case
runs twice in a process of its own, the plugin edited between the runs
(refused); a step reading them all, not edited, replays."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import refused_after_edit, registry_runs

pytestmark = pytest.mark.slow

REGISTRY = """
import weakref

WEAK_REFS = {}
BY_PAIR = {}

def weak(obj):
    WEAK_REFS[obj.__name__] = weakref.ref(obj)
    return obj

class Slotted:
    __slots__ = ("classes",)

    def __init__(self):
        self.classes = {}

    def get(self, name):
        return self.classes[name]

slotted = Slotted()
SLOT_LOOKUP = slotted.get

def slot(cls):
    slotted.classes[cls.__name__] = cls
    return cls

def by_pair(cls):
    BY_PAIR[(cls, "json")] = cls.__name__
    return cls
"""

CLASS = """
from registry import by_pair, slot, weak

@weak
@by_pair
@slot
class P:
    def run(self, x):
        return x * 7
"""

FUNCTION = """
from registry import weak

@weak
def p(x):
    return x * 9
"""

# name: (the registry the step reads, what the step returns, whether the plugin is a function).
CASES = {
    "weak_ref_to_a_class": ("WEAK_REFS", 'WEAK_REFS["P"]()().run(x)', False),
    "weak_ref_to_a_function": ("WEAK_REFS", 'WEAK_REFS["p"]()(x)', True),
    "keyed_by_pairs_of_classes": ("BY_PAIR", "next(k for k, _ in BY_PAIR)().run(x)", False),
    "slotted_registry": ("slotted", 'slotted.get("P")().run(x)', False),
    "slotted_registry_lookup": ("SLOT_LOOKUP", 'SLOT_LOOKUP("P")().run(x)', False),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return registry_runs(
        tmp_path_factory.mktemp, {n: (r, e) for n, (r, e, _) in CASES.items()}, REGISTRY, (CLASS, FUNCTION), lambda n: CASES[n][2]
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_plugin_in_a_registry_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_plugins_replay(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value [70, 90, 70, 70, 70]" in second and after == ["s"], second
