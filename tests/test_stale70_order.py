"""Two steps in two modules calling each other (`agents70.agent` calls
`tools70.tool`, which calls `agent` back). The recursion through their
fingerprints ended at the fingerprint a step had at its decoration, which
depends on what was imported before it: a run recorded by a process that
imported `agents70` first was refused by one that imported `tools70` first
(and fingerprinted `tool` first), with no code changed. A step's
fingerprint is now one function of the code (`_fingerprint.stepgraph`).
The same pair with `tools70`'s helper edited between the processes is
refused, before and after (no stale value was found: every step a call
may run counts by its code as it is now)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import twice

pytestmark = pytest.mark.slow  # processes, forked

COUNT = """
import os

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")
"""
AGENTS = """
import durable, tools70
from count70 import count

@durable.step
def agent(n):
    count("agent")
    return "a" if n <= 0 else tools70.tool(n - 1) + "a"
"""
TOOLS = """
import durable, agents70
from count70 import count

def polish(text):
    return text.lower()

@durable.step
def tool(n):
    count("tool")
    return polish("t" if n <= 0 else agents70.agent(n - 1) + "t")
"""
FLOW = """
import os, signal, durable, agents70, tools70

@durable.workflow(run_id="r70")
def wf(n):
    out = agents70.agent(n)
    if os.environ.get("KILL"):
        os.kill(os.getpid(), signal.SIGKILL)  # its record is kept, the run not finished
    return out + "!"

@durable.workflow(run_id="o70")
def other(n):
    return tools70.tool(n)
"""
RUN = """
import importlib, os
for name in os.environ["FIRST"].split():  # which module is imported, and decorates its step, first
    importlib.import_module(name)
import durable, flow70
if os.environ.get("ASK"):
    print("asked", len(flow70.other.fingerprint))  # `tool` fingerprinted before `agent`
try:
    print("value", flow70.wf(2), flush=True)
except durable.DefinitionChangedError as e:
    print("refused", " ".join(str(e).split()))
"""


def test_steps_calling_each_other_keep_one_fingerprint_whatever_was_imported_first(
    tmp_path: Path,
) -> None:
    folders = {"same": tmp_path / "same", "edited": tmp_path / "edited"}
    for folder in folders.values():
        folder.mkdir()
        for name, text in (
            ("count70", COUNT),
            ("agents70", AGENTS),
            ("tools70", TOOLS),
            ("flow70", FLOW),
        ):
            (folder / f"{name}.py").write_text(text)

    def between(name: str, folder: Path) -> dict[str, str]:
        if name == "edited":
            tools = folder / "tools70.py"
            tools.write_text(tools.read_text().replace("text.lower()", "text.upper()"))
        return {"FIRST": "tools70", "ASK": "1"}

    done = twice(folders, RUN, between, first={"FIRST": "agents70", "KILL": "1"})
    for name in folders:
        first, counted, _, _ = done[name]
        assert "value" not in first and counted == ["agent", "tool", "agent"], done[name]
    # Was: refused, "agent: ... -> ..." with nothing changed (the fingerprint `agent` had at
    # decoration counted in `tool`'s, and it differs with the import order).
    _, _, second, counted = done["same"]
    assert "asked 12" in second and "value ata!" in second, second
    assert counted == ["agent", "tool", "agent"], counted  # replayed, not run again
    _, _, second, counted = done["edited"]
    assert "refused" in second and "agent" in second and "value" not in second, second
    assert counted == ["agent", "tool", "agent"], counted
