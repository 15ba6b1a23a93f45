"""Code a step runs that no name in it shows: a helper another module's
global picks by a feature flag (`helper = {"a": t7, "b": t5}[os.environ[
"MODE"]]`, read as `calc.helper`; a method a class body picks so, `run =
t7 if FLAG else t5`, or a base, `class N(A if FLAG else B)`), a value a module of the user's puts in
`builtins` (`builtins.K = 7`, read as a bare `K`), a module that replaces
itself in `sys.modules` with an object of its own class (`K` a property
there), and code a module hands to a library (a pandas accessor its
`register_series_accessor` registers, run as `pd.Series(...).geo.scaled()`;
`fractions.Fraction.scale = scale` or `setattr(...)`, run as
`Fraction(x).scale()`; a formatter `np.set_printoptions` is given, run as
`str(array)`). Counted by the statements' text alone (the same
whatever the flag said, or what the functions' bodies now return), each
resume after the change replayed the output of the old code; the module
replaced in `sys.modules` crashed fingerprinting with an AttributeError.
Each case runs twice in a process of its own, changed between the runs
(refused); the same code, unchanged, replays. (`flag_picks_helper_imported`,
`from calc import helper`, was refused before: kept beside its sibling.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import file_case_runs, refused_after_edit

pytestmark = pytest.mark.slow

CALC = """
import os

def t7(x):
    return x * 7

def t5(x):
    return x * 5

helper = {"a": t7, "b": t5}[os.environ.get("MODE", "a")]
"""

METHODS = """
import os

def t7(self, x):
    return x * 7

def t5(self, x):
    return x * 5

FLAG = os.environ.get("MODE", "a") == "a"

class M:
    run = t7 if FLAG else t5

class A:
    def run(self, x):
        return x * 7

class B:
    def run(self, x):
        return x * 5

class N(A if FLAG else B):
    pass
"""

SETUP_K = """
import builtins
builtins.K = 7
"""

REPLACED = """
import sys

class _Settings:
    @property
    def K(self):
        return 7

sys.modules[__name__] = _Settings()
"""

ACCESSOR = """
import pandas as pd

@pd.api.extensions.register_series_accessor("geo")
class Geo:
    def __init__(self, series):
        self._s = series

    def scaled(self):
        return self._s * 7
"""

PRINTS = """
import numpy as np

def money(v):
    return f"{v * 7:.0f}"

np.set_printoptions(formatter={"float": money})
"""

PATCHES = """
import fractions

def scale(self):
    return int(self) * 7

fractions.Fraction.scale = scale
"""

# name: (the files besides flow.py, flow.py's head, what its step returns,
# the edit between the runs: (file, old, new), or ("ENV", name, value)).
CASES: dict[str, tuple[dict[str, str], str, str, tuple[str, str, str]]] = {
    "flag_picks_helper": ({"calc.py": CALC}, "import calc", "calc.helper(x)", ("ENV", "MODE", "b")),
    "flag_picks_helper_imported": (
        {"calc.py": CALC},
        "from calc import helper",
        "helper(x)",
        ("ENV", "MODE", "b"),
    ),
    "flag_picks_method": (
        {"methods.py": METHODS},
        "from methods import M",
        "M().run(x)",
        ("ENV", "MODE", "b"),
    ),
    "flag_picks_base": ({"methods.py": METHODS}, "from methods import N", "N().run(x)", ("ENV", "MODE", "b")),
    "builtins_value": ({"setup_k.py": SETUP_K}, "import setup_k", "x * K", ("setup_k.py", "K = 7", "K = 5")),
    "pandas_accessor": (
        {"geo.py": ACCESSOR},
        "import geo\nimport pandas as pd",
        "int(pd.Series([x]).geo.scaled()[0])",
        ("geo.py", "* 7", "* 5"),
    ),
    "library_setter_given": (
        {"prints.py": PRINTS},
        "import prints\nimport numpy as np",
        "int(str(np.array([float(x)])).strip('[]'))",
        ("prints.py", "* 7", "* 5"),
    ),
    "library_class_patched": (
        {"patches.py": PATCHES},
        "import patches\nfrom fractions import Fraction",
        "Fraction(x).scale()",
        ("patches.py", "* 7", "* 5"),
    ),
    "library_class_setattr": (
        {"patches2.py": PATCHES.replace("fractions.Fraction.scale = scale", 'setattr(fractions.Fraction, "scaled", scale)')},
        "import patches2\nfrom fractions import Fraction",
        "Fraction(x).scaled()",
        ("patches2.py", "* 7", "* 5"),
    ),
    "module_replaced_by_object": (
        {"settings.py": REPLACED},
        "import settings",
        "x * settings.K",
        ("settings.py", "return 7", "return 5"),
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return file_case_runs(tmp_path_factory.mktemp, CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_code_no_name_shows_is_never_replayed_after_a_change(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output), or a crash


def test_the_same_code_replays(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert f"value {[70] * len(CASES)}" in second and after == ["s"], second
