"""A fifteenth round of the peers' own test cases: DBOS's workflows and
Prefect's cached tasks as scripts make them with a factory
(`make_workflow(opts)` in DBOS's tests/test_dbos.py idiom, a task made per
configuration), called without a module-level name holding what the
factory made (`print(mk(1, OPTS)(5))`) or made by a factory another module
defines (`w = helpers.mk(...)` in a script), its list made from the
environment. Earlier rounds are in tests/test_peer_ports*.py. Executions
are counted by the step bodies themselves, in a file (real processes: what
counts is the script's own module-level statements)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in

FACTORY = """
import os
import durable

def counted(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

def mk(k, opts):
    @durable.step
    def scale(x):
        counted(f"scale{k}")
        return k * x

    @durable.workflow(run_id=f"r{k}")
    def wf(x):
        return scale(x) + len(opts)
    return wf

def cached(opts):
    @durable.step(cache=True)
    def total(x):
        counted("total")
        return x + sum(opts)
    return total
"""

SCRIPT = """
import os
import durable
from helpers import cached, mk

N = int(os.environ["N"])

def refused(call):
    try:
        return call()
    except durable.DefinitionChangedError:
        return "refused"

def here(k, opts):
    @durable.workflow(run_id=f"h{k}")
    def wf(x):
        return x + len(opts)
    return wf

w = mk(1, [1] * N)
print(refused(lambda: w(5)), refused(lambda: here(2, [0] * N)(5)), cached([N])(5))
"""


@pytest.mark.slow
def test_dbos_workflows_and_prefect_tasks_a_factory_makes_from_the_environment(
    tmp_path: Path,
) -> None:
    """N=1, N=2, then N=1 again: N=2 is refused for both completed runs
    (the workflow a factory of another module made, and one no name holds)
    and computes the cached task anew; N=1 replays its runs and hits its
    cache entry. Each step body ran once per distinct N. Seen failing: N=2
    replayed N=1's `6` and `6` (the list counted by its type only: no
    module-level statement of the factory's module names what it made)."""
    (tmp_path / "helpers.py").write_text(FACTORY)
    (tmp_path / "flow.py").write_text(SCRIPT)
    runs = [run_in(tmp_path, "flow.py", N=n).strip() for n in "121"]
    assert runs == ["6 6 6", "refused refused 7", "6 6 6"]
    assert sorted((tmp_path / "count").read_text().split()) == ["scale1", "total", "total"]
