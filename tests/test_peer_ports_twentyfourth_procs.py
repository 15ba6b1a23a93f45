"""A twenty-fourth round of the peers' own test cases, across processes:
DBOS's recovery of a workflow that handed a step's failure to the next
step, and PraisonAI's agents given their behaviour when made (a method
bound to the instance at run time), the labels of a classification made
from settings (`Enum("Labels", names)`) and settings kept in a module
made for them. Each phase a real process, forked by
`run_each` (another hash seed each): the same failure, raised again by the
same code in a new process, replays the report of it, and so do the
same agent, labels and settings; a failure for another reason, an agent
styled otherwise, other labels or settings run their steps again (under
"rerun"). Executions are counted by the step
bodies, in a file. The in-process ports are in
tests/test_peer_ports_twentyfourth.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import enum, os, types
import durable


def count(what):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(what + "\\n")


class ToolError(Exception):
    pass


class Agent:
    name = "helper"


def style(tone):
    def respond(self, text):
        return f"{self.name} ({tone}): {text}"
    return respond


@durable.step
def search(q):
    try:
        raise {"slow": TimeoutError, "down": ConnectionRefusedError}[os.environ["CAUSE"]](q)
    except OSError as e:
        raise ToolError("search failed") from e


@durable.step
def report(err):
    count("report")
    return repr(err.__cause__)


@durable.step
def reply(agent, text):
    count("reply")
    return agent.respond(text)


@durable.step
def classify(text, labels, settings):
    count("classify")
    return f"{text}: {'/'.join(m.name for m in labels)} x{settings.RATE}"


@durable.workflow(run_id="agent", on_change="rerun")
def flow(q):
    try:
        found = search(q)
    except ToolError as err:
        found = report(err)
    agent = Agent()
    agent.respond = types.MethodType(style(os.environ["TONE"]), agent)
    said = reply(agent, "hi")
    settings = types.ModuleType("settings")
    settings.RATE = int(os.environ["RATE"])
    told = classify("mail", enum.Enum("Labels", os.environ["LABELS"]), settings)
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return found, said, told
"""

RUN = """
import durable, flow24
try:
    print(flow24.flow("x"))
except durable.Suspended:
    print("suspended")
"""


def test_dbos_recovered_in_a_new_process_replays_the_same_failure_and_agent_only(tmp_path: Path) -> None:
    (tmp_path / "flow24.py").write_text(FLOW)
    same = {"CAUSE": "slow", "TONE": "formal", "LABELS": "spam ham", "RATE": "2", "STOP": "1"}
    other = {"CAUSE": "down", "TONE": "casual", "LABELS": "spam eggs", "RATE": "3"}
    first, again, changed = run_each([(tmp_path, RUN, same), (tmp_path, RUN, same), (tmp_path, RUN, other)])
    assert first.split() == again.split() == ["suspended"], (first, again)
    # Was the first attempt's, each: TimeoutError('x'), formal, spam/ham x2.
    assert changed.strip() == (
        "(\"ConnectionRefusedError('x')\", 'helper (casual): hi', 'mail: spam/eggs x3')"
    ), changed
    ran = (tmp_path / "count").read_text().split()
    assert ran == ["report", "reply", "classify"] * 2, ran
