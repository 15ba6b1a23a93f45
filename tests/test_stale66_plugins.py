"""A plugin looked up by its entry point's name (`entry_points(group=g,
name=name)`) from a distribution installed as a library (a folder named
`site-packages`), upgraded between the run and its re-call (`pip install
-U`: a new `*.dist-info`, a new version, the same entry point, other
code): the installed library's code counts by nothing, so the completed
run was answered with the old plugin's output (`x-v1`, where the plugin
now gives `x-v2`). The declaring distribution's version now joins the
call's identity: a changed call, executing nothing; the plugin not
upgraded, the run is answered from its record."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # two processes

FLOW = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
from importlib.metadata import entry_points
import durable

@durable.step
def use(name, q):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
    (found,) = entry_points(group="s66.tools", name=name)
    return found.load()(q)

@durable.workflow
def wf(name, q):
    return use(name, q)
"""

RUN = """
import durable, flow
for name in ("s66up", "s66same"):
    try:
        print(name, "value", flow.wf(name, "x"))
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "distribution s66up" in str(e) else e)
"""


def _install(site: Path, name: str, version: str) -> None:
    for old in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[s66.tools]\n{name} = {name}:search\n")
    (site / name).mkdir(exist_ok=True)
    (site / name / "__init__.py").write_text(f"def search(q):\n    return q + '-v{version}'\n")


def test_an_upgraded_plugin_found_by_its_entry_point_is_a_changed_call(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    site = tmp_path / "site-packages"
    _install(site, "s66up", "1")
    _install(site, "s66same", "1")
    first = run_each([(tmp_path, RUN, {})])[0]
    assert first.split() == ["s66up", "value", "x-v1", "s66same", "value", "x-v1"], first
    _install(site, "s66up", "2")
    second = run_each([(tmp_path, RUN, {})])[0]
    # Was: s66up value x-v1 (the old plugin's answer).
    assert second.split() == ["s66up", "refused", "s66same", "value", "x-v1"], second
    assert sorted((tmp_path / "count").read_text().split()) == ["s66same", "s66up"]
