"""What fpspeed keeps for each loaded module between fingerprints (what it
sets of a library, `libstate._OTHERS`; the names it hands to one,
`libcode._CHAINS`) never goes stale: a global of another module rebound
(its number of names the same), its file edited and reloaded, or a function
it hands to a library rebound, changes the fingerprint of a step reading
that library exactly as a fingerprint computed with nothing kept does.
In-process: each step is defined anew (a reload) and fingerprinted."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from durable._fingerprint import libcode, libstate
from durable._fingerprint.fingerprint import fingerprint_function

SEEDER = "import random\nrandom.seed({seed})\n"
FLOW = """\
import random
import fractions
import durable

@durable.step
def draw() -> float:
    return random.random() + float(fractions.Fraction(1, 3).scale())
"""
HANDER = """\
import fractions

def scale(self):
    return self * 2

def scale3(self):
    return self * 3

fractions.Fraction.scale = scale
"""


def _afresh(step: object) -> str:
    """The step's fingerprint with nothing kept for the loaded modules."""
    for kept in (libstate._OTHERS, libcode._CHAINS):
        kept.clear()
    libstate._LOADED.clear()
    libcode._KEPT.clear()
    return fingerprint_function(step.__wrapped__).value  # type: ignore[attr-defined]


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, types.ModuleType]]:
    suffix = tmp_path.name.replace("-", "_")
    names = {"seeder": f"fpk_seeder_{suffix}", "hander": f"fpk_hander_{suffix}", "flow": f"fpk_flow_{suffix}"}
    (tmp_path / f"{names['seeder']}.py").write_text(SEEDER.format(seed=1))
    (tmp_path / f"{names['hander']}.py").write_text(HANDER)
    (tmp_path / f"{names['flow']}.py").write_text(FLOW)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = getattr(__import__("fractions").Fraction, "scale", None)
    loaded = {key: importlib.import_module(name) for key, name in names.items()}
    yield {**loaded, "path": tmp_path}  # type: ignore[dict-item]
    for name in names.values():
        sys.modules.pop(name, None)
    fraction = __import__("fractions").Fraction
    if saved is None:
        delattr(fraction, "scale")
    else:
        fraction.scale = saved


def _again(modules: dict[str, types.ModuleType]) -> object:
    return importlib.reload(modules["flow"]).draw


def test_a_rebound_global_of_another_module_counts_as_afresh(modules: dict[str, types.ModuleType]) -> None:
    before = modules["flow"].draw.fingerprint
    assert before == _afresh(modules["flow"].draw)
    # Kept now for every loaded module; `random` rebound (same number of names): its
    # `random.seed(1)` sets no library's state any more.
    modules["seeder"].random = types.SimpleNamespace(seed=lambda n: None)  # type: ignore[attr-defined]
    step = _again(modules)
    assert step.fingerprint != before  # type: ignore[attr-defined]
    assert step.fingerprint == _afresh(step)  # type: ignore[attr-defined]


def test_an_edited_and_reloaded_module_counts_as_afresh(modules: dict[str, types.ModuleType]) -> None:
    before = modules["flow"].draw.fingerprint
    path = Path(modules["path"])
    (path / f"{modules['seeder'].__name__}.py").write_text(SEEDER.format(seed=2) + "\n")
    importlib.reload(modules["seeder"])
    step = _again(modules)
    assert step.fingerprint != before  # type: ignore[attr-defined]
    assert step.fingerprint == _afresh(step)  # type: ignore[attr-defined]


def test_a_handed_function_rebound_counts_as_afresh(modules: dict[str, types.ModuleType]) -> None:
    before = modules["flow"].draw.fingerprint
    # `fractions.Fraction.scale = scale` names `scale`: the function it names now.
    modules["hander"].scale = modules["hander"].scale3  # type: ignore[attr-defined]
    step = _again(modules)
    assert step.fingerprint != before  # type: ignore[attr-defined]
    assert step.fingerprint == _afresh(step)  # type: ignore[attr-defined]
