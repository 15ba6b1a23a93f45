"""A step selecting a plugin by entry point in a group its code spells
(`entry_points(group="r63.tools", name=name)`) counted every installed
distribution's entry point of that name, whatever its group: mkdocs's
`search` plugin upgraded (here `r63other`, declaring `search` in its own
group) refused the resume of a run that never loads it. Now only the
group it looks in counts (`entrypoints.entry_groups`); the distribution
declaring the plugin it loads, upgraded, is still a changed call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, run_each

pytestmark = pytest.mark.slow  # two processes

FLOW = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
from importlib.metadata import entry_points
import durable

@durable.step
def use(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
    (found,) = entry_points(group="r63.tools", name=name)
    return found.load()(1)

@durable.workflow(run_id="r1")
def wf(x):
    out = use("search")
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out + x
"""


def _install(site: Path, name: str, version: str, group: str) -> None:
    for old in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{group}]\nsearch = {name}:search\n")
    (site / f"{name}.py").write_text("def search(q):\n    return q\n")


def test_only_the_group_a_step_looks_in_counts(tmp_path: Path) -> None:
    folders = {n: tmp_path / n for n in ("other_upgraded", "plugin_upgraded")}
    for place in folders.values():
        place.mkdir()
        (place / "flow.py").write_text(FLOW)
        _install(place / "site-packages", "r63tools", "1", "r63.tools")
        _install(place / "site-packages", "r63other", "1", "r63other.plugins")
    first = run_each([(f, RUN_FLOW, {"STOP": "1"}) for f in folders.values()])
    assert all("suspended" in o for o in first), first
    _install(folders["other_upgraded"] / "site-packages", "r63other", "2", "r63other.plugins")
    _install(folders["plugin_upgraded"] / "site-packages", "r63tools", "2", "r63.tools")
    other, plugin = run_each([(f, RUN_FLOW, {}) for f in folders.values()])
    assert "value 11" in other, other  # was refused: "distribution r63other"
    assert "refused" in plugin and "distribution r63tools" in plugin, plugin
    assert [(f / "count").read_text().split() for f in folders.values()] == [["search"], ["search"]]
