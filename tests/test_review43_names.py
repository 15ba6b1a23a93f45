"""A string naming `train.run` where `train.py` does its work at import (a
script training at top level): counting what the string names imported
`train` while the fingerprint was taken, and its top-level work ran in the
workflow's process though no code called it. Such a file is never imported
for a string; it counts by its text (an edit of it is refused, the same
file replays). Each case runs twice in a process of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, twice

pytestmark = pytest.mark.slow

TRAIN = """
with open("trained", "a") as f:
    f.write("trained\\n")


def run(x):
    return x * 7
"""


NAMED = 'return {"entry": "train.run", "x": x}'
# name: (flow.py's head, the step's return); a module named in a branch not taken counts too.
CASES = {
    "edited": ("", NAMED),
    "same": ("", NAMED),
    "import_module": ("import importlib", 'return importlib.import_module("train").run(x) if x > 100 else x'),
    "helper_edited": ("", NAMED),  # helpers.py, which train.py imports, edited: its text counts too
}
HELPERS = """
def k():
    return 7
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folders = {}
    for name, (head, body) in CASES.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "flow.py").write_text(EDITED_FLOW.format(head=head, body=body))
        (folder / "train.py").write_text("import helpers\n" + TRAIN)
        (folder / "helpers.py").write_text(HELPERS)
        folders[name] = folder

    def between(name: str, folder: Any) -> dict[str, str]:
        if name == "helper_edited":
            (folder / "helpers.py").write_text(HELPERS.replace("7", "5"))
        elif name != "same":
            (folder / "train.py").write_text(TRAIN.replace("x * 7", "x * 5"))
        return {}

    found = twice(folders, RUN_FLOW, between, {"STOP": "1"})
    return {name: (*found[name], (folder / "trained").exists()) for name, folder in folders.items()}


@pytest.mark.parametrize("name", ["edited", "import_module", "helper_edited"])
def test_a_script_named_by_a_string_is_not_imported_and_its_edit_is_refused(runs: dict[str, Any], name: str) -> None:
    first, count, second, after, trained = runs[name]
    assert "suspended" in first and count == ["s"], first
    assert not trained  # was: train.py's top-level work ran in the workflow's process
    assert "refused" in second and "changed" in second, second
    assert after == ["s"]


def test_the_same_script_named_by_a_string_replays(runs: dict[str, Any]) -> None:
    first, count, second, after, trained = runs["same"]
    assert "suspended" in first and count == ["s"], first
    assert "value {'entry': 'train.run', 'x': 10}" in second and after == ["s"] and not trained, second
