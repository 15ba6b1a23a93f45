"""A step importing the module the environment names
(`importlib.import_module(os.environ["PLUGIN"])`) counted every module of
the user's (`built-names:*`): any edit of any module refused its resume.
Now the name the variable holds as the call is made is the pattern
(`builtnames._environment`): that module's text counts, and the variable
naming another module is another call; an edit elsewhere is no change."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, twice

pytestmark = pytest.mark.slow  # two processes

HEAD = "import importlib"
BODY = 'return importlib.import_module(os.environ["PLUGIN"]).run(x)'
CHANGES = {  # folder: (file edited, PLUGIN of the resume)
    "other_edited": ("other.py", "plug_a"),
    "plugin_edited": ("plug_a.py", "plug_a"),
    "other_named": ("", "plug_b"),
}


def test_a_module_named_by_the_environment_counts_alone(tmp_path: Path) -> None:
    folders = {}
    for name in CHANGES:
        folders[name] = place = tmp_path / name
        place.mkdir()
        (place / "flow.py").write_text(EDITED_FLOW.format(head=HEAD, body=BODY))
        for mod in ("plug_a", "plug_b", "other"):
            (place / f"{mod}.py").write_text("def run(x):\n    return x + 1\n")

    def between(name: str, place: Path) -> dict[str, str]:
        edited, plugin = CHANGES[name]
        if edited:
            (place / edited).write_text("def run(x):\n    return x + 2\n")
        return {"PLUGIN": plugin}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1", "PLUGIN": "plug_a"})
    for name, (first, count, second, after) in runs.items():
        assert "suspended" in first and count == ["s"], first
        if name == "other_edited":  # was refused: "built-names:*"
            assert "value 11" in second and after == ["s"], second
        else:
            assert "refused" in second and after == ["s"], second
