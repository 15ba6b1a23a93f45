"""A step selecting a plugin with setuptools' `pkg_resources.iter_entry_points(
"r71.tools", name)` was not seen looking plugins up by entry point at all
(`entrypoints.finds_entries` knew `entry_points` alone): the distribution
providing the plugin it loads upgraded, its resume replayed what the old
plugin computed. Now it counts as `entry_points(group=..., name=...)`
does (`entrypoints._told`): the group and the name it looks up, and the
distribution providing what it loads; an entry point of that name in
another group (`r71other`, upgraded) is none it loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import install_distribution, run_each

pytestmark = pytest.mark.slow  # two processes

FLOW = """
import os, sys, warnings
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
warnings.simplefilter("ignore")  # pkg_resources is deprecated
import durable

@durable.step
def use(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
    import pkg_resources  # slow to import: only where it is used

    (found,) = pkg_resources.iter_entry_points("r71.tools", name)
    return found.load()(1)

@durable.workflow(run_id=lambda name: name)
def wf(name):
    out = use(name)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return out + 10
"""
RUN = """
import durable, flow
for name in ("search", "lookup"):
    try:
        print(name, "value", flow.wf(name))
    except durable.Suspended:
        print(name, "suspended")
    except durable.DefinitionChangedError as e:
        print(name, "refused" if "distribution r71tools2" in str(e) and "r71other" not in str(e) else e)
"""


def test_iter_entry_points_counts_the_plugin_it_loads(tmp_path: Path) -> None:
    pytest.importorskip("pkg_resources")
    (tmp_path / "flow.py").write_text(FLOW)
    site = tmp_path / "site-packages"
    install_distribution(site, "r71tools", "1", "r71.tools", ("search",))
    install_distribution(site, "r71tools2", "1", "r71.tools", ("lookup",))
    install_distribution(site, "r71other", "1", "r71other.plugins", ("search", "lookup"))
    (first,) = run_each([(tmp_path, RUN, {"STOP": "1"})])
    assert first.split() == ["search", "suspended", "lookup", "suspended"], first
    install_distribution(site, "r71other", "2", "r71other.plugins", ("search", "lookup"))  # another group's
    install_distribution(site, "r71tools2", "2", "r71.tools", ("lookup",))  # the plugin `lookup` loads
    (second,) = run_each([(tmp_path, RUN, {})])
    # Was: lookup value 11, the old plugin's output replayed.
    assert second.split() == ["search", "value", "11", "lookup", "refused"], second
    assert sorted((tmp_path / "count").read_text().split()) == ["lookup", "search"]
