"""Code a step runs that reviews found no name of it shows, each run twice in
a process of its own with one edit between (`twice`):

- a plugin class held in an object of the user's inside a registry
  (`REG[name] = Entry(cls)`, a dataclass; `Holder((cls, opts))`, a plain
  object holding a pair), run as `REG[name].cls().run(x)`: an object inside
  a container was not looked into;
- a codec the user's search function gives (`codecs.register(search)`), run
  as `"a".encode("seven")`: only a string reaches it;
- a formatter a library's setter is given inside a function the module calls
  at import (`def setup(): np.set_printoptions(...)` then `setup()`): only
  module-level calls were followed.

Counted by the statements' text alone, each resume after the edit replayed
the old output (`value 70`). The same code, unchanged, replays."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import file_case_runs, refused_after_edit

pytestmark = pytest.mark.slow

REGISTRY = """
import dataclasses

@dataclasses.dataclass
class Entry:
    cls: type
    opts: dict

class Holder:
    def __init__(self, pair):
        self.pair = pair

REG = {}
PAIRS = {}
"""

PLUGINS = """
import registry

class Fast:
    def run(self, x):
        return x * 7

registry.REG["fast"] = registry.Entry(Fast, {"n": 1})
registry.PAIRS["fast"] = registry.Holder((Fast, {"n": 1}))
"""

CODEC = """
import codecs

def encode(text, errors="strict"):
    return str(len(text) * 7).encode(), len(text)

def decode(data, errors="strict"):
    return bytes(data).decode(), len(data)

def search(name):
    return codecs.CodecInfo(encode, decode, name="seven") if name == "seven" else None

codecs.register(search)
"""

PRINTS = """
import numpy as np

def money(v):
    return f"{v * 7:.0f}"

def setup():
    np.set_printoptions(formatter={"float": money})

setup()
"""

# name: (the files besides flow.py, flow.py's head, what its step returns, the edit: (file, old, new)).
CASES: dict[str, tuple[dict[str, str], str, str, tuple[str, str, str]]] = {
    "object_in_registry": (
        {"registry.py": REGISTRY, "plugins.py": PLUGINS},
        "import plugins\nfrom registry import REG",
        'REG[os.environ.get("P", "fast")].cls().run(x)',
        ("plugins.py", "x * 7", "x * 5"),
    ),
    "pair_in_object_in_registry": (
        {"registry.py": REGISTRY, "plugins.py": PLUGINS},
        "import plugins\nfrom registry import PAIRS",
        'PAIRS[os.environ.get("P", "fast")].pair[0]().run(x)',
        ("plugins.py", "x * 7", "x * 5"),
    ),
    "codec_registered": (
        {"mycodec.py": CODEC},
        "import mycodec",
        'int("a".encode("seven")) * x',
        ("mycodec.py", "* 7", "* 5"),
    ),
    "setter_in_function_run_at_import": (
        {"prints.py": PRINTS},
        "import prints\nimport numpy as np",
        "int(str(np.array([float(x)])).strip('[]'))",
        ("prints.py", "* 7", "* 5"),
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return file_case_runs(tmp_path_factory.mktemp, CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_code_no_name_shows_is_never_replayed_after_a_change(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_code_replays(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value [70, 70, 70, 70]" in second and after == ["s"], second
