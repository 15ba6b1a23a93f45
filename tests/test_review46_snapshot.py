"""What a factory-made function holds was read once per object for the
process (stale48, `madewith.held_snapshot`), when the first run
fingerprinted it, and answered for every later run of that process: a
program that loads each job's configuration into the list its step holds
(`items[:] = config`) recorded run b, made with [1, 2], under the snapshot
run a took, [1]. In another process, b resumed with the configuration it
ran with was refused though nothing changed, and b resumed with [1] was
served the output [1, 2] made: a silent stale replay. Kept per run now: a
run reads it afresh when it first fingerprints it, a run called again
keeps its own (the DBOS ports flip flags between calls), a fork its
source's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

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
        if os.environ.get("STOP") == str(len(items)):
            durable.suspend("waiting")
        return out

    for run_id, config in jobs:
        items[:] = config  # the job's configuration, loaded in place
        try:
            print(run_id, "value", wf.with_options(run_id=run_id)(10))
        except durable.Suspended:
            print(run_id, "suspended")
        except durable.DefinitionChangedError as e:
            print(run_id, "refused", e)
"""


def test_a_run_resumed_is_fingerprinted_with_what_it_held_not_with_another_runs(tmp_path: Path) -> None:
    folders = [tmp_path / "same", tmp_path / "other"]
    for folder in folders:
        folder.mkdir()
        (folder / "flow.py").write_text(FLOW)
    first = "import flow; flow.main([('a', [1]), ('b', [1, 2])])"
    outs = run_each([(f, first, {"STOP": "2"}) for f in folders])
    assert all("a value 11" in o and "b suspended" in o for o in outs), outs
    same, other = run_each(
        [
            (folders[0], "import flow; flow.main([('b', [1, 2])])", {}),
            (folders[1], "import flow; flow.main([('b', [1])])", {}),
        ]
    )
    assert "b value 13" in same, same  # was: refused, though b held [1, 2] when it ran
    assert "b refused" in other and "made-contents" in other, other  # was: value 13, made with [1, 2]
    for folder in folders:  # a and b ran s once each; nothing ran again
        assert (folder / "count").read_text().split() == ["s", "s"]
