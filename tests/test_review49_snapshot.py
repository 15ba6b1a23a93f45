"""A run starting reads what a factory-made step holds as the last run here
read it when nothing but runs' steps changed it since (stale48, the lead's
`madewith._since_last_run`). "The last run" was two runs: the one that read
it last (a run recalled complete, or refused at its start: a read, no body)
and the one whose body ended last. A batch of jobs, each loading its
configuration into the list the step holds, ran `a` [1], `x` [2], `a` again
(recalled: read [1], no body), then `y` [2]: [2] was how `x`'s body left
the list, so `y` was fingerprinted with `a`'s [1] and ran with [2]. In
another process, `y` resumed with [1] replayed 12, made with [2]."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow  # one interpreter forking the three phases

FLOW = """
import os, durable

def mk(items):
    @durable.step
    def s(x):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write("s\\n")
        return sum(items) + x
    return s

def main(jobs):
    items = []
    step = mk(items)

    @durable.workflow
    def wf(x):
        out = step(x)
        if os.environ.get("STOP") == os.environ["JOB"]:
            durable.suspend("waiting")
        return out

    for run_id, config in jobs:
        items[:] = config  # the job's configuration, loaded in place
        os.environ["JOB"] = run_id
        try:
            print(run_id, "value", wf.with_options(run_id=run_id)(10))
        except durable.Suspended:
            print(run_id, "suspended")
        except durable.DefinitionChangedError as e:
            print(run_id, "refused", e)
"""


def test_a_job_after_a_recalled_run_is_fingerprinted_with_its_own_contents(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    first, other, same = run_each(
        [
            (tmp_path, "import flow; flow.main([('a', [1]), ('x', [2]), ('a', [1]), ('y', [2])])", {"STOP": "y"}),
            (tmp_path, "import flow; flow.main([('y', [1])])", {}),
            (tmp_path, "import flow; flow.main([('y', [2])])", {}),
        ]
    )
    assert "a value 11" in first and "x value 12" in first and "y suspended" in first, first
    assert "y refused" in other and "made-contents" in other, other  # was: y value 12, made with [2]
    assert "y value 12" in same, same  # y resumed as it ran: replayed
    assert (tmp_path / "count").read_text().split() == ["s", "s", "s"]  # a, x, y once each
