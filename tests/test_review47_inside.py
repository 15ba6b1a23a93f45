"""An awkward object of the user's inside a registry (`REG[name] =
Entry(cls)`), each run twice in a process of its own with one edit of the
plugin class held there between (`twice`):

- `__slots__` left unset with a `__getattr__` that looks names up in a dict
  (`self._data[k]`: a KeyError, not an AttributeError, for an unset slot):
  asking whether the slot was set ran `__getattr__`, whose KeyError skipped
  the whole object, so the class held in its other slot was never looked
  at and the resume after the edit replayed the old output (`value 70`);
- a `__getattribute__` that raises (a proxy's): the fingerprint raised the
  object's own RuntimeError, and no run started at all.

Both now count: the slots and `__dict__` are read as `object` reads them
(`inside.attribute_values`), so no code of the user's class runs. In-process
checks of the same below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from durable._fingerprint.holds import held_callables, held_classes
from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

LAZY = """
class Entry:
    __slots__ = ("cls", "opt", "_data")

    def __init__(self, cls):
        self.cls = cls
        self._data = {}

    def __getattr__(self, k):
        return self._data[k]

REG = {}
"""

PLUGINS = """
import registry

class Fast:
    def run(self, x):
        return x * 7

registry.REG["fast"] = registry.Entry(Fast)
"""


class Fast:
    def run(self, x: int) -> int:
        return x * 7


def double(x: int) -> int:
    return x * 2


class Lazy:
    __slots__ = ("_data", "cls", "fn", "opt")

    def __init__(self, cls: type) -> None:
        self.cls, self.fn, self._data = cls, double, dict[str, object]()

    def __getattr__(self, k: str) -> object:
        return self._data[k]  # KeyError for the unset slot `opt`


class Guarded:
    def __init__(self) -> None:
        self.cls = Fast

    def __getattribute__(self, k: str) -> object:  # a proxy's: every name asked of it raises
        raise RuntimeError(k)


def test_an_unset_slot_of_an_object_with_getattr_hides_nothing_it_holds() -> None:
    reg = {"fast": Lazy(Fast)}
    assert set(held_classes(reg)) == {Lazy, Fast}  # was (Lazy,)
    assert set(map(id, held_callables(reg))) == {id(double)}  # was []


def test_an_object_whose_getattribute_raises_is_looked_into() -> None:
    assert set(held_classes({"a": Guarded()})) == {Guarded, Fast}  # raised RuntimeError('__dict__')


@pytest.mark.slow
def test_an_edit_of_a_class_held_by_an_awkward_object_is_never_replayed(tmp_path: Path) -> None:
    folder = tmp_path / "lazy"
    folder.mkdir()
    (folder / "registry.py").write_text(LAZY)
    (folder / "plugins.py").write_text(PLUGINS)
    head = "import plugins\nfrom registry import REG"
    (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body='return REG["fast"].cls().run(x)'))

    def between(name: str, folder: Path) -> dict[str, str]:
        path = folder / "plugins.py"
        path.write_text(path.read_text().replace("x * 7", "x * 5"))
        return {}

    runs: dict[str, Any] = twice({"lazy": folder}, RUN_FLOW, between, {"STOP": "1"})
    refused_after_edit(runs["lazy"])  # was `value 70` (the old output)
