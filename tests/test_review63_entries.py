"""A step selecting a plugin by entry point in a group its code spells
(`entry_points(group="r63.tools", name=name)`) counted every installed
distribution's entry point of that name, whatever its group: mkdocs's
`search` plugin upgraded (here `r63other`, declaring `search` in its own
group) refused the resume of a run that never loads it. Now only the
group it looks in counts (`entrypoints.entry_groups`); the distribution
declaring the plugin it loads, upgraded, is still a changed call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import install_distribution, run_each

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
        print(name, "refused" if "distribution r63tools2" in str(e) and "r63other" not in str(e) else e)
"""


def test_only_the_group_a_step_looks_in_counts(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    site = tmp_path / "site-packages"
    install_distribution(site, "r63tools", "1", "r63.tools", ("search",))
    install_distribution(site, "r63tools2", "1", "r63.tools", ("lookup",))
    install_distribution(site, "r63other", "1", "r63other.plugins", ("search", "lookup"))
    (first,) = run_each([(tmp_path, RUN, {"STOP": "1"})])
    assert first.split() == ["search", "suspended", "lookup", "suspended"], first
    install_distribution(site, "r63other", "2", "r63other.plugins", ("search", "lookup"))  # mkdocs's `search` upgraded
    install_distribution(site, "r63tools2", "2", "r63.tools", ("lookup",))  # the plugin `lookup` loads upgraded
    (second,) = run_each([(tmp_path, RUN, {})])
    # Was: search refused ("distribution r63other").
    assert second.split() == ["search", "value", "11", "lookup", "refused"], second
    assert sorted((tmp_path / "count").read_text().split()) == ["lookup", "search"]
