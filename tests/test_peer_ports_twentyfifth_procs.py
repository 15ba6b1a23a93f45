"""A twenty-fifth round of the peers' own test cases, across processes
(DBOS's recovery, PraisonAI's agent handing its tool's failure on): an
error a step returned, and a list held twice beside sets whose order
differs per hash seed, resumed in a new process (`run_each`: another hash
seed each). The error came back from its record without its chain and
`report`, given it, was refused on resume; the sharing of one object
must count the same in every process. Executions counted in a file. The
in-process ports are in tests/test_peer_ports_twentyfifth.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import copy, enum, os
import durable
from durable._core.identity import value_digest


def count(what):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(what + "\\n")


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Tag:
    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Tag) and other.name == self.name


class ToolError(Exception):
    pass


@durable.step
def attempt(q):
    count("attempt")
    try:
        try:
            raise TimeoutError("slow")
        except OSError as e:
            raise ToolError(f"search {q} failed") from e
    except ToolError as err:
        return err


@durable.step
def plan(rows, modes, tags):
    count("plan")
    rows = copy.deepcopy(rows)
    rows[0].append("x")
    return [len(r) for r in rows], sorted(m.value for m in modes), len(tags)


@durable.step
def report(err, planned):
    count("report")
    return f"{err}: {err.__cause__!r} {planned}"


@durable.workflow(run_id="agent")
def agent(q):
    row, tag = [], Tag("t")
    given = ([row, row], {Mode.FAST, Mode.SAFE}, [tag, {tag, Tag("u"), "v", "w"}, tag])
    print(value_digest(given))
    text = report(attempt(q), plan(*given))
    if os.environ.get("STOP"):
        durable.suspend("waiting")
    return text
"""

RUN = """
import durable, flow25
try:
    print(flow25.agent("x"))
except durable.Suspended:
    print("suspended")
"""


def test_dbos_recovered_in_a_new_process_replays_the_steps_given_a_returned_error(tmp_path: Path) -> None:
    (tmp_path / "flow25.py").write_text(FLOW)
    first, again = run_each([(tmp_path, RUN, {"STOP": "1"}), (tmp_path, RUN, {})])
    digest, said = first.split()
    assert said == "suspended", first
    assert again.split()[0] == digest, (first, again)  # the same in another hash seed
    assert again.split("\n", 1)[1].strip() == "search x failed: TimeoutError('slow') ([1, 1], ['fast', 'safe'], 3)", again
    ran = (tmp_path / "count").read_text().split()
    assert ran == ["attempt", "plan", "report"], ran  # was refused: report "arguments changed"
