"""The fourteenth round of the peers' own test cases (see
tests/test_peer_ports_fourteenth.py), as their users write them in a
script: DBOS's tests/test_dbos.py and test_classdecorators.py, a workflow
called again and again (by a list comprehension in `main()`, in an `if
__name__ == "__main__":` block, in a loop) whose steps (a function and an
instance method) bump a module-level Counter and append to a list that the
script prints (`json.dumps(COUNTS)`, `sorted(LOG)`, `list(LOG)`). Each
distinct run executes each step once, a run called again is answered from
its records, and a second process replays everything. Real processes;
executions are counted by the steps themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_in

# Every test here takes seconds and is the same on every Python: the fast
# suites of the other Pythons do not even import this module.
pytestmark = pytest.mark.slow

# A step counting its runs in a module-level Counter and listing its arguments.
PLAIN = """
COUNTS = collections.Counter()
LOG = []

@durable.step
def plain(x):
    COUNTS["plain"] += 1
    LOG.append(x)
    return x
"""

SCRIPT = """
import collections, json
import durable
""" + PLAIN + """
class Worker:
    @durable.step
    def go(self, x):
        COUNTS["go"] += 1
        return x

@durable.workflow(run_id=lambda x: f"r{x}")
def wf(x):
    return plain(x) + Worker().go(x)

def main():
    results = [wf(i) for i in range(3)]
    again = [wf(i) for i in range(3)]
    print(results, again, json.dumps(COUNTS), sorted(LOG))

if __name__ == "__main__":
    first = wf(7)
    print(first, wf(7), json.dumps(COUNTS), len(LOG))
    main()
    for i in range(2):
        print(wf(9), json.dumps(COUNTS), list(LOG))
"""

FIRST = """14 14 {"plain": 1, "go": 1} 1
[0, 2, 4] [0, 2, 4] {"plain": 4, "go": 4} [0, 1, 2, 7]
18 {"plain": 5, "go": 5} [7, 0, 1, 2, 9]
18 {"plain": 5, "go": 5} [7, 0, 1, 2, 9]"""

AGAIN = """14 14 {} 0
[0, 2, 4] [0, 2, 4] {} []
18 {} []
18 {} []"""


@pytest.mark.slow
def test_dbos_workflows_called_again_by_a_script_printing_its_counters(tmp_path: Path) -> None:
    """Seen failing: the second `wf(7)` refused as changed, `now flow.COUNTS
    changed; now flow.LOG changed` (the whole `__main__` block was one
    statement of the counter, so `main()`, reading it, was followed and
    counted it by its contents; the step's own `def`, a statement of
    COUNTS, counted LOG, which the step only appends to, as read), and a
    warning that `Worker.go` changed its `self`."""
    (tmp_path / "flow.py").write_text(SCRIPT)
    assert run_in(tmp_path, "flow.py").strip() == FIRST
    assert run_in(tmp_path, "flow.py").strip() == AGAIN


WITH_ARGS = """
import argparse, collections, json
import durable
""" + PLAIN + """
@durable.workflow(run_id=lambda x: f"r{x}")
def wf(x):
    return plain(x)

try:
    first = wf(1)
    print(first, wf(1), json.dumps(COUNTS))
except KeyError:
    raise
results = []
results.append(wf(2))
results.append(wf(2))
if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--x", type=int, default=4)
    args = parser.parse_args()
    first = wf(args.x)
    print(first, wf(args.x), json.dumps(COUNTS), sorted(LOG), results)
"""


@pytest.mark.slow
def test_dbos_workflows_called_again_by_a_script_with_an_argument_parser(tmp_path: Path) -> None:
    """The workflow's results kept in a list the script fills and prints,
    with an argument parser taking `type=int`. Seen failing: the second
    `wf(2)` refused as changed, `now flow.results changed` (`type=int`
    handed to `add_argument` took `int` for a name the script may rebind,
    so no builtin counted as one that only shows what it is given, and each
    `print(...)` became a statement of all it prints; a statement handing
    `COUNTS` to `json.dumps` counted all it reads, `results` too)."""
    (tmp_path / "flow.py").write_text(WITH_ARGS)
    first = '1 1 {"plain": 1}\n4 4 {"plain": 3} [1, 2, 4] [2, 2]'
    assert run_in(tmp_path, "flow.py").strip() == first
    assert run_in(tmp_path, "flow.py").strip() == "1 1 {}\n4 4 {} [] [2, 2]"
