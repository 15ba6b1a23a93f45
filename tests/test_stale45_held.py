"""A module a function holds rather than names: in a closure cell (a step
made by a factory, `make(settings)`; a helper made so), in its class
(`self.settings.THRESHOLD`; an instance's too), as a helper's
default (`def h(x, settings=settings)`) or in a `functools.partial`'s
arguments (`h = partial(impl, settings)`); or finds by a string
(`getattr(settings, NAME)`, `importlib.import_module(NAME).THRESHOLD`).
`main()` sets `settings.THRESHOLD = 2` at run time: read through such a
name, the value counted as `module:settings` alone (or the module by its
statements) and the resume replayed what 1 gave.
Read like a module imported at module level (`settings.THRESHOLD` by its
value now), it is refused; the same value replays. Each case runs twice
in a process of its own (`twice`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import SUSPENDING_WF, twice

pytestmark = pytest.mark.slow

FLOW = """
import functools, importlib, os, durable
import settings as _settings
{head}""" + SUSPENDING_WF

COUNTED = """
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
"""

CASES = {
    # The step itself, made by a factory.
    "closure": """
def make(settings):
    @durable.step
    def s(x):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("s\\n")
        return x * settings.THRESHOLD
    return s

s = make(_settings)
""",
    # A method step reading a module its class holds, through `self`.
    "class_attribute": """
class Scorer:
    settings = _settings

    @durable.step
    def s(self, x):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("s\\n")
        return x * self.settings.THRESHOLD

s = Scorer().s
""",
    # A helper made by a factory, a helper's default, a partial's argument.
    "helper_closure": """
def make(settings):
    def h(x):
        return x * settings.THRESHOLD
    return h

h = make(_settings)
""",
    "helper_default": """
def h(x, settings=_settings):
    return x * settings.THRESHOLD
""",
    "helper_partial": """
def impl(settings, x):
    return x * settings.THRESHOLD

h = functools.partial(impl, _settings)
""",
    # A class a factory's closure holds, whose attribute holds the module; an
    # instance's attribute, through a bound method or a global instance.
    "closure_class": """
class Holder:
    settings = _settings

def make(klass):
    def h(x):
        return x * klass.settings.THRESHOLD
    return h

h = make(Holder)
""",
    "bound_method": """
class Holder:
    def __init__(self, settings):
        self.settings = settings

    def h(self, x):
        return x * self.settings.THRESHOLD

h = Holder(_settings).h
""",
    "global_instance": """
class Holder:
    def __init__(self, settings):
        self.settings = settings

HOLDER = Holder(_settings)

def h(x):
    return x * HOLDER.settings.THRESHOLD
""",
    # An attribute or a module found by a string a global holds: counted as the
    # module was read whole (its statements), not by the value now.
    "getattr_name": """
NAME = "THRESHOLD"

def h(x):
    return x * getattr(_settings, NAME)
""",
    "import_module_name": """
NAME = "settings"

def h(x):
    return x * importlib.import_module(NAME).THRESHOLD
""",
}
STEP = f"""
@durable.step
def s(x):{COUNTED}    return h(x)
"""

RUN = """
import os, durable, settings, flow
settings.THRESHOLD = int(os.environ["K"])  # main() sets it at run time
try:
    print("value", flow.wf(10))
except durable.Suspended:
    print("suspended")
except durable.DefinitionChangedError as e:
    print("refused", e)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, head in CASES.items():
        for how in ("edited", "same"):
            folder = tmp_path_factory.mktemp(name)
            body = head if name in ("closure", "class_attribute") else head + STEP
            (folder / "flow.py").write_text(FLOW.format(head=body))
            (folder / "settings.py").write_text("THRESHOLD = 1\n")
            folders[f"{name}:{how}"] = folder

    def between(label: str, folder: Path) -> dict[str, str]:
        return {"K": "2" if label.endswith(":edited") else "1"}

    return twice(folders, RUN, between, {"STOP": "1", "K": "1"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_read_through_a_held_module_is_never_replayed(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:edited"]
    assert "suspended" in first and count == ["s"], first
    assert "refused" in second and "changed" in second, second
    assert "value 10" not in second and after == ["s"]  # was `value 10` (what 1 gave)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_value_replays(runs: dict[str, Any], name: str) -> None:
    first, count, second, after = runs[f"{name}:same"]
    assert "suspended" in first and count == ["s"], first
    assert "value 10" in second and after == ["s"], second
