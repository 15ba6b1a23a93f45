"""A step that kills its own process (`os._exit`, SIGKILL, the kernel's
OOM killer) was run again by every resume, and died again, forever: the
attempt it killed leaves the run `running` and nothing else. The next
attempt now counts such deaths at the same place (the same records, the
same code) across real kills, and past `DURABLE_MAX_RECOVERY_ATTEMPTS`
(3) marks the run failed instead of running that step again, saying so
and how to force another try (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os, signal, durable

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

@durable.step
def a():
    count("a")
    return 1

@durable.step
def b(x):
    count("b")
    if not os.environ.get("FIXED"):
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return x + 1

@durable.workflow(name="wf", run_id="r1")
def wf():
    return b(a())

try:
    print("value", wf())
except durable.DurableError as e:
    print("error", type(e).__name__, e)
print("status", wf.runs()[0].status)
"""


def test_a_step_that_kills_its_process_is_tried_a_bounded_number_of_times(tmp_path: Path) -> None:
    more = {"DURABLE_MAX_RECOVERY_ATTEMPTS": "4"}
    fixed = {"DURABLE_MAX_RECOVERY_ATTEMPTS": "5", "FIXED": "1"}
    (tmp_path / "flow.py").write_text(FLOW)
    outs = run_each([(tmp_path, "import flow", env) for env in [{}, {}, {}, {}, {}, more, fixed]])
    counted = (tmp_path / "count").read_text().split()
    # Three deaths in b; the fourth and fifth calls refuse, running nothing;
    # a larger limit allows one more try (killed again), the fixed step completes.
    assert outs[:3] == ["", "", ""], outs
    for out in outs[3:5]:
        assert out.startswith("error RunKilledError"), out
        assert "killed 3 times in a row at position 1" in out, out
        assert "DURABLE_MAX_RECOVERY_ATTEMPTS=4" in out and out.endswith("status failed\n"), out
    assert outs[5] == "", outs
    assert outs[6] == "value 2\nstatus completed\n", outs
    assert counted == ["a", "b", "b", "b", "b", "b"], counted


# Each attempt gets further, then dies: a step (or a checkpointed loop
# item) kills its process the first time it runs.
PROGRESS = """
import os, signal, durable

def once(i):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"{i}\\n")
    if not os.path.exists(f"died{i}"):
        open(f"died{i}", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return i

s = durable.step(once)

@durable.workflow(name="wf", run_id="r1")
def wf():
    if os.environ.get("ITEMS"):
        return sum(durable.loop_over(once, range(4), checkpoint_items=True))
    return sum(s(i) for i in range(4))

print("value", wf())
"""

# Killed in a durable sleep each time (a machine rebooted during it): no
# step kills the process.
SLEEPING = """
import os, signal, durable
from durable._core import plan

def count(name):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(name + "\\n")

if os.environ.get("KILL"):
    plan.pause = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
else:  # the hour is over
    plan.pause = lambda *a, **k: None

@durable.step
def a():
    count("a")
    return 1

@durable.workflow(name="wf", run_id="r1")
def wf():
    x = a()
    durable.sleep(3600)
    return x + 1

print("value", wf())
"""


def test_deaths_where_the_run_got_further_or_in_a_sleep_do_not_add_up(tmp_path: Path) -> None:
    """Four kills in a row, each after the run got further (its steps, or
    its checkpointed loop's items), or in a durable sleep: never refused."""
    folders = {name: tmp_path / name for name in ("steps", "items", "sleep")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "flow.py").write_text(SLEEPING if name == "sleep" else PROGRESS)
    envs = {"steps": [{}] * 5, "items": [{"ITEMS": "1"}] * 5, "sleep": [{"KILL": "1"}] * 4 + [{}]}
    outs = run_each([(folders[n], "import flow", env) for n in folders for env in envs[n]])
    assert outs == ["", "", "", "", "value 6\n"] * 2 + ["", "", "", "", "value 2\n"], outs
    for name in ("steps", "items"):
        assert (folders[name] / "count").read_text().split() == ["0", "0", "1", "1", "2", "2", "3", "3"]
    assert (folders["sleep"] / "count").read_text().split() == ["a"]
