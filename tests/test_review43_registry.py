"""A registry in a closure that the same function fills and reads
(`plugin(name, cls=None)`: registering with a class, looking up without),
filled at import by the plugin modules and called by a step to find its
plugin. The cell is written by the function's own body, yet what it holds
the step's call did not put there: counted as state the function keeps,
an edit of the plugin replayed its old output. Each case runs twice in a
process of its own, the plugin edited between the runs (refused) or not
(replayed)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow

REGISTRY = """
def make():
    registered = {}

    def plugin(name, cls=None):
        if cls is not None:
            registered[name] = cls
            return cls
        return registered[name]

    return plugin


plugin = make()
"""

PLUGINS = """
from registry import plugin


class Fast:
    def run(self, x):
        return x * 7


plugin("fast", Fast)
"""

HEAD = """
import plugins
from registry import plugin
"""


# name: (registry.py, what the step returns); "instances": it keeps an instance
# of each class registered, made from the class its caller hands it, not
# from what the step's call asks for (its key).
CASES = {
    "edited": (REGISTRY, 'return plugin("fast")().run(x)'),
    "same": (REGISTRY, 'return plugin("fast")().run(x)'),
    "instances": (REGISTRY.replace("= cls\n", "= cls()\n"), 'return plugin("fast").run(x)'),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, (registry, body) in CASES.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=HEAD, body=body))
        (folder / "registry.py").write_text(registry)
        (folder / "plugins.py").write_text(PLUGINS)
        folders[name] = folder

    def between(name: str, folder: Any) -> dict[str, str]:
        if name != "same":
            (folder / "plugins.py").write_text(PLUGINS.replace("x * 7", "x * 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("name", ["edited", "instances"])
def test_an_edited_plugin_of_a_self_filled_registry_is_refused(runs: dict[str, Any], name: str) -> None:
    refused_after_edit(runs[name])  # was `value 70` (the old output)


def test_the_same_plugin_of_a_self_filled_registry_replays(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value 70" in second and after == ["s"], second
