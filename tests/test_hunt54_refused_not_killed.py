"""A resume refused at a step (a call that does not match its record) is
no death. `run.py` put the manifest back as it found it, but copied it
after `killed.count_killed` had counted the dead holder it took over from:
the refused attempt left the run `running` with that death counted, so
the next attempt counted the same death again. One `kill -9` and two
refusals, then the fixed call: RunKilledError ("killed 3 times in a row"),
the run marked failed. The fault campaign found it as a `rebase=True`
resume killed before it rewrote a record, then a resume without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os, signal, durable

def count(what):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(what + "\\n")

@durable.step
def a(n):
    count(f"a{n}")
    return n

@durable.step
def b():
    count("b")
    if not os.path.exists("died"):
        open("died", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return 1

@durable.workflow(name="wf", run_id="r1")
def wf():
    with open("arg") as f:  # what the call is made with, read at run time
        n = int(f.read())
    return a(n) + b()

try:
    print("value", wf())
except durable.DurableError as e:
    print("error", type(e).__name__)
"""


def test_a_refused_resume_of_a_killed_run_is_not_counted_as_a_death(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    (tmp_path / "arg").write_text("1")
    # Killed in b; then a(2) where a(1) is recorded, twice; then a(1) again.
    jobs = [(tmp_path, "open('arg', 'w').write('1'); import flow", {}),
            (tmp_path, "open('arg', 'w').write('2'); import flow", {}),
            (tmp_path, "import flow", {}),
            (tmp_path, "open('arg', 'w').write('1'); import flow", {})]  # fmt: skip
    outs = run_each(jobs)
    assert outs[0] == ""  # killed
    assert outs[1].startswith("error ") and "RunKilledError" not in outs[1], outs
    assert outs[2] == outs[1], outs
    assert outs[3] == "value 2\n", outs
    assert (tmp_path / "count").read_text().split() == ["a1", "b", "b"]
