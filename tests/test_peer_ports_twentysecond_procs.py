"""The twenty-second round's tool modules named by an argument (see
tests/test_peer_ports_twentysecond.py) across processes, as a user meets
it: PraisonAI's agent configuration names its tools' module
(`load_from_module(module_path)`), the run suspends after the tool call
(LangGraph's interrupt), the tool's file is edited, and the next process
resumes the run. It replayed what the old tool answered; now it is
refused as changed and runs nothing, and unedited it replays. Each phase
a real process (`twice`); executions counted in a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import RUN_FLOW, refused_after_edit, twice

pytestmark = pytest.mark.slow  # two interpreters, forked per flow

FLOW = """
import importlib, os, pkgutil, durable

AGENT = {{"name": "researcher", "tools": "agent_tools22"}}

@durable.step
def s(module, x):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("s\\n")
    return {lookup}(x)

@durable.workflow(run_id="r1")
def wf(x):
    out = s(AGENT["tools"], x)
    if os.environ.get("STOP"):
        durable.suspend("waiting for a human")
    return out
"""

LOOKUPS = {
    "import": "importlib.import_module(module).run",
    "entrypoint": 'pkgutil.resolve_name(module + ":run")',
}
TOOL = "def run(x):\n    return x * 3\n"


def test_a_resumed_agent_whose_tool_module_was_edited_is_refused(tmp_path: Path) -> None:
    folders = {}
    for case, lookup in [*LOOKUPS.items(), ("same", LOOKUPS["import"])]:
        folders[case] = place = tmp_path / case
        place.mkdir()
        (place / "agent_tools22.py").write_text(TOOL)
        (place / "flow.py").write_text(FLOW.format(lookup=lookup))

    def between(case: str, place: Path) -> dict[str, str]:
        if case != "same":  # the tool's body edited: x * 3 -> x * 5
            (place / "agent_tools22.py").write_text(TOOL.replace("3", "5"))
        return {}

    runs = twice(folders, RUN_FLOW, between, {"STOP": "1"})
    for case in LOOKUPS:
        refused_after_edit(runs[case])  # it printed `value 30`, the old tool's answer
        assert "agent_tools22" in runs[case][2], runs[case][2]
    first, count, second, after = runs["same"]
    assert "suspended" in first and "value 30" in second and count == after == ["s"], second
