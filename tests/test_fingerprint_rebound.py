"""What a step reads, changed from where its own statements do not show:
a subclass listed through `type(self)`, a module's global rebound by
another module or through `sys.modules`. The first process runs the
workflow to completion, the files are edited, the second calls the same
run again: the step must not be replayed with its old output (refused,
naming what changed), and it ran once in all."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from .scripts import run_in, twice

HEAD = """
import os
import durable

def mark():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("first\\n")
"""
FLOW = """
@durable.workflow
def flow():
    return first()
"""
METHOD_FLOW = """
@durable.workflow
def flow():
    return Base().first()
"""
RUN = """
import durable, flow
try:
    print("result", flow.flow.with_options(run_id="r1")())
except durable.DefinitionChangedError as e:
    print("refused", e)
"""
FROM_SETTINGS = """
import settings
import plugin

@durable.step
def first():
    mark()
    return {read}
""" + FLOW
SUBCLASS_ADDED = ("class A(Base):\n    pass\n", "class A(Base):\n    pass\nclass B(Base):\n    pass\n")

# name: (files, (file, old, new), what the refusal says)
CASES: dict[str, tuple[dict[str, str], tuple[str, str, str], str]] = {
    # `type(self)` is the class of `self`, as `self.__class__` is.
    "subclasses-of-type-self": (
        {
            "flow.py": HEAD
            + """
class Base:
    @durable.step
    def first(self):
        mark()
        return sorted(c.__name__ for c in type(self).__subclasses__())

class A(Base):
    pass
"""
            + METHOD_FLOW
        },
        ("flow.py", *SUBCLASS_ADDED),
        "Base.first: now uses global type(self).__subclasses__:flow.B",
    ),
    # The class it is given: counted as any class of the step's module.
    "subclasses-of-a-class-argument": (
        {
            "flow.py": HEAD
            + """
class Base:
    pass

class A(Base):
    pass

@durable.step
def first(kind):
    mark()
    found = kind
    return sorted(c.__name__ for c in found.__subclasses__())

@durable.workflow
def flow():
    return first(Base)
"""
        },
        ("flow.py", *SUBCLASS_ADDED),
        "first: now uses global __subclasses__:flow.B",
    ),
    # `settings.RATES` is rebound by a function of another module, called
    # at its import: settings' own statements do not show it.
    "rebound-by-another-modules-function": (
        {
            "settings.py": "RATES = [1]\n",
            "setup_mod.py": "import settings\n\ndef configure():\n    settings.RATES = [3]\n\nconfigure()\n",
            "flow.py": HEAD
            + "import settings\nimport setup_mod\n\n@durable.step\ndef first():\n    mark()\n"
            + "    return sum(settings.RATES)\n"
            + FLOW,
        },
        ("setup_mod.py", "[3]", "[4]"),
        "first: global settings.RATES changed",
    ),
    "rebound-by-another-modules-statement": (
        {
            "settings.py": "RATES = [1]\n",
            "plugin.py": "import settings as s\n\ns.RATES = [3]\n",
            "flow.py": HEAD
            + "import settings\nimport plugin\n\n@durable.step\ndef first():\n    mark()\n"
            + "    return sum(settings.RATES)\n"
            + FLOW,
        },
        ("plugin.py", "[3]", "[4]"),
        "first: global settings.RATES changed",
    ),
    "rebound-by-another-module-through-sys-modules": (
        {
            "settings.py": "RATES = [1]\n",
            "plugin.py": "import sys\n\nsys.modules['settings'].RATES = [3]\n",
            "flow.py": HEAD
            + "import settings\nimport plugin\n\n@durable.step\ndef first():\n    mark()\n"
            + "    return sum(settings.RATES)\n"
            + FLOW,
        },
        ("plugin.py", "[3]", "[4]"),
        "first: global settings.RATES changed",
    ),
    # Changed, not rebound: in place, an item, through a name bound to it.
    "changed-in-place-by-another-module": (
        {
            "settings.py": "RATES = [1]\n",
            "plugin.py": "import settings\n\nsettings.RATES.append(3)\n",
            "flow.py": HEAD + FROM_SETTINGS.format(read="sum(settings.RATES)"),
        },
        ("plugin.py", "append(3)", "append(4)"),
        "first: global settings.RATES changed",
    ),
    "an-item-set-by-another-module": (
        {
            "settings.py": "CFG = {'r': [1]}\n",
            "plugin.py": "import settings\n\nsettings.CFG['r'] = [3]\n",
            "flow.py": HEAD + FROM_SETTINGS.format(read="sum(settings.CFG['r'])"),
        },
        ("plugin.py", "[3]", "[4]"),
        "first: global settings.CFG changed",
    ),
    "a-class-attribute-set-through-an-imported-name": (
        {
            "settings.py": "class Cfg:\n    RATES = [1]\n",
            "plugin.py": "from settings import Cfg\n\nCfg.RATES = [3]\n",
            "flow.py": HEAD + FROM_SETTINGS.format(read="sum(settings.Cfg.RATES)"),
        },
        ("plugin.py", "[3]", "[4]"),
        "first: global settings.Cfg changed",
    ),
    "rebound-by-another-module-through-import-module": (
        {
            "settings.py": "RATES = [1]\n",
            "plugin.py": "import importlib\n\nimportlib.import_module('settings').RATES = [3]\n",
            "flow.py": HEAD + FROM_SETTINGS.format(read="sum(settings.RATES)"),
        },
        ("plugin.py", "[3]", "[4]"),
        "first: global settings.RATES changed",
    ),
    "rebound-through-sys-modules": (
        {
            "flow.py": HEAD
            + """
import sys
RATES = [1]

def configure():
    setattr(sys.modules[__name__], "RATES", [3])

configure()

@durable.step
def first():
    mark()
    return sum(RATES)
"""
            + FLOW
        },
        ("flow.py", "[3]", "[4]"),
        "first: global RATES changed",
    ),
}


def run(folder: Path, code: str = RUN) -> str:
    """`code` (the run `r1` of `flow.flow`), in a fresh interpreter in `folder`."""
    return run_in(folder, "-c", code)


ANOTHER = "another-attribute-set-elsewhere"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each case run, edited, run again (`twice`: two interpreters, where
    a child a run made 22 a Python); ANOTHER's plugin also sets `s.OTHER`,
    which its edit changes."""
    folders = {}
    for name in [*CASES, ANOTHER]:
        folders[name] = tmp_path_factory.mktemp(name)
        files = CASES["rebound-by-another-modules-statement" if name == ANOTHER else name][0]
        for rel, text in files.items():
            (folders[name] / rel).write_text(textwrap.dedent(text).lstrip())
    plugin = folders[ANOTHER] / "plugin.py"
    plugin.write_text(plugin.read_text() + "s.OTHER = [5]\n")

    def edit(name: str, folder: Path) -> dict[str, str]:
        edited, old, new = CASES[name][1] if name in CASES else ("plugin.py", "[5]", "[6]")
        path = folder / edited
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
        return {}

    return twice(folders, RUN, edit)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_changed_out_of_sight_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    first, _, second, count = runs[name]
    assert first.startswith("result"), first
    assert second.startswith("refused"), second  # was: the old result, replayed
    assert CASES[name][2] in second, second
    assert count == ["first"]


def test_another_attribute_set_elsewhere_still_replays(runs: dict[str, Any]) -> None:
    """What another module sets on `settings` besides what the step reads,
    edited: no change (the step replays, having run once)."""
    first, _, second, count = runs[ANOTHER]
    assert first == "result 3\n"
    assert second == "result 3\n"
    assert count == ["first"]


CACHED = """
import os
import durable
from settings import Model
import plugin

@durable.step(cache=True)
def total(m):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("total\\n")
    return sum(m.RATES)

print("result", total(Model()))
"""


def test_a_class_attribute_another_module_sets_counts_in_an_argument(tmp_path: Path) -> None:
    """`Model.RATES = [3]` in plugin.py: an object of `Model` passed to a
    cached step counts it with the class statement, so that an edit there
    is another call (computed), not the cached output of the old one."""
    (tmp_path / "settings.py").write_text("class Model:\n    RATES = [1]\n")
    (tmp_path / "plugin.py").write_text("from settings import Model\n\nModel.RATES = [3]\n")
    (tmp_path / "flow.py").write_text("")
    (tmp_path / "cached.py").write_text(CACHED)
    out = [run(tmp_path, "import cached")]
    (tmp_path / "plugin.py").write_text("from settings import Model\n\nModel.RATES = [4]\n")
    out.append(run(tmp_path, "import cached"))
    assert out == ["result 3\n", "result 4\n"]  # was: 3 served from the cache
    assert (tmp_path / "count").read_text().split() == ["total", "total"]
