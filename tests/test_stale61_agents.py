"""Stale replays in agents as users write them (stale61): a tool looked up
by a name the step builds at run time, `import_module(f"tools.{name}")`
(plugin tools, one module per tool in a `tools` package). The step counted
its own module only, so after `tools/search.py` was edited a resume
replayed what the old tool answered. A string whose dotted head ends in a
dot (`"tools."`, `"tools.%s"`, `"tools.{}"`) names a package whose modules
the step may import: each module in that package counts whole. Each
flow's phases run as real processes (`twice`: one interpreter per
phase); the step's executions counted in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import EDITED_FLOW, RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow  # two interpreters, forked per flow

# How the step builds the tool module's name from `name` (its run-time value).
LOOKUPS = {
    "fstring": 'importlib.import_module(f"tools.{name}")',
    "concat": 'importlib.import_module("tools." + name)',
    "percent": '__import__("tools.%s" % name, fromlist=["run"])',
    "format": 'importlib.import_module("tools.{}".format(name))',
}

TOOL = 'def run(x):\n    return x * 3\n'


def test_a_tool_module_named_at_run_time_is_counted_by_its_code(tmp_path: Path) -> None:
    folders = {}
    for case, lookup in [*LOOKUPS.items(), ("same", LOOKUPS["fstring"])]:
        folders[case] = place = tmp_path / case
        (place / "tools").mkdir(parents=True)
        (place / "tools" / "__init__.py").write_text("")
        (place / "tools" / "search.py").write_text(TOOL)
        (place / "tools" / "calc.py").write_text("def run(x):\n    return -x\n")
        body = f'name = "search" if x > 0 else "calc"\n    return {lookup}.run(x)'
        (place / "flow.py").write_text(EDITED_FLOW.format(head="import importlib", body=body))

    def between(case: str, place: Path) -> dict[str, str]:
        if case != "same":  # the tool's body edited: x * 3 -> x * 5
            (place / "tools" / "search.py").write_text(TOOL.replace("3", "5"))
        return {}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1"})
    for case in LOOKUPS:
        refused_after_edit(runs[case])  # it printed `value 30`, the old tool's answer
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 30" in second and count == after == ["s"], second
