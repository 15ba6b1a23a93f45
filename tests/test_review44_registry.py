"""A registry in a closure that the same function fills and reads
(`plugin(name, cls=None)`), filled at import by the plugin modules with
what it makes of the class it is handed: a `partial` of it, or a `lambda`
calling it. Taken for a memo the function keeps (`kept.self_filled`: the
value is made by a call), or counted by the class's name alone (a class
held in the lambda's closure cell), an edit of the plugin replayed its old
output. Each case runs twice in a process of its own, the plugin edited
between the runs (refused) or not (replayed)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice
from tests.test_review43_registry import HEAD, PLUGINS, REGISTRY

pytestmark = pytest.mark.slow

LAMBDA = "import functools\n" + REGISTRY.replace("= cls\n", "= lambda: cls()\n")
CASES = {
    "partial": ("import functools\n" + REGISTRY.replace("= cls\n", "= functools.partial(cls)\n")),
    "lambda": LAMBDA,
    "same": LAMBDA,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, registry in CASES.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=HEAD, body='return plugin("fast")().run(x)'))
        (folder / "registry.py").write_text(registry)
        (folder / "plugins.py").write_text(PLUGINS)
        folders[name] = folder

    def between(name: str, folder: Any) -> dict[str, str]:
        if name != "same":
            (folder / "plugins.py").write_text(PLUGINS.replace("x * 7", "x * 5"))
        return {}

    return twice(folders, RUN_FLOW, between, {"STOP": "1"})


@pytest.mark.parametrize("case", ["partial", "lambda"])
def test_an_edited_plugin_a_closure_registry_wraps_is_refused(runs: dict[str, Any], case: str) -> None:
    refused_after_edit(runs[case])


def test_the_same_plugin_replays(runs: dict[str, Any]) -> None:
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 70" in second and count == after == ["s"], second
