"""A twenty-third round of the peers' own test cases, across processes:
LangGraph's tests/test_interruption.py (`test_interruption_without_state_updates`,
run under each of its durability modes, "sync", "async" and "exit", one
thread invoked again and again with `interrupt_after="*"`) and DBOS's
tests/test_dbos.py recovery of a workflow whose process died in a step.
Here the level changes between the attempts of one run as LangGraph's
`graph.invoke(..., durability=...)` lets it change between invocations:
each attempt a real process under its own level (`with_options(durability=)`),
killed (`kill -9`) inside a step, every ordered pair of levels following
one another, and an interrupt (`wait_for`) in the middle answered by one
attempt and killed after it; the steps after it run in a child run (a
subgraph, which takes the level its caller was given), some attempts
recover the run (`Workflow.recover()`, DBOS's recovery of pending
workflows) rather than call it. The same for a rerun of a changed step
(`on_change="rerun"`) killed under each level, and for a durable sleep
killed in turn under each. A process crash loses nothing at any level:
each step recorded before a kill replays, the answer and the sleep's
wake-up time too, and only the step each kill was in runs again. Real
processes (one per attempt, forked by `run_each`); executions are counted
by the step bodies, in a file. The in-process ports of the round are in
tests/test_peer_ports_twentythird.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_each

pytestmark = pytest.mark.slow

FLOW = """
import os, signal
import durable


@durable.step
def s(i):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"s{i}\\n")
    if os.environ.get("KILL_AT") == str(i):
        os.kill(os.getpid(), signal.SIGKILL)
    return i * 10


@durable.workflow
def tail(answer):
    return [s(i) for i in range(6, 12)] + [answer]


@durable.workflow(run_id="r1")
def wf():
    out = [s(i) for i in range(6)]
    answer = durable.wait_for("go")
    return out + tail(answer)
"""

ATTEMPT = """
import os, durable, flow
wf = flow.wf.with_options(durability=os.environ["LEVEL"])
try:
    if os.environ["ANSWER"]:
        print("value", wf.resume("r1", inputs={"go": os.environ["ANSWER"]}).value)
    elif os.environ["RECOVER"]:  # DBOS's recovery of pending workflows
        print("recovered", [(r.run_id, r.status) for r in wf.recover()])
    else:
        print("value", wf())
except durable.Suspended:
    print("suspended")
"""

# (level, the step the attempt is killed in, the answer it gives, whether
# it recovers rather than calls): each ordered pair of levels follows a kill once.
ATTEMPTS = [
    ("none", "1", "", ""), ("none", "2", "", "1"), ("fsync", "3", "", ""), ("fsync", "4", "", "1"),
    ("batch", "5", "", ""), ("batch", "", "", "1"), ("none", "7", "yes", ""), ("batch", "8", "", "1"),
    ("fsync", "9", "", ""), ("none", "10", "", "1"), ("fsync", "", "", "1"), ("batch", "", "", ""),
]  # fmt: skip


def test_langgraph_durability_modes_changed_between_attempts_killed_in_a_step(
    tmp_path: Path,
) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    env = [{"LEVEL": lvl, "KILL_AT": k, "ANSWER": a, "RECOVER": r} for lvl, k, a, r in ATTEMPTS]
    said = run_each([(tmp_path, ATTEMPT, e) for e in env])
    value = "value " + str([i * 10 for i in range(12)] + ["yes"])
    recovered = "recovered [('r1', '{}')]".format
    assert [out.strip() for out in said] == [""] * 5 + [recovered("suspended")] + [""] * 4 + [
        recovered("completed"),
        value,
    ], said
    ran = (tmp_path / "count").read_text().split()
    twice = {1, 2, 3, 4, 5, 7, 8, 9, 10}
    assert sorted(ran) == sorted(
        f"s{i}" for i in range(12) for _ in range(2 if i in twice else 1)
    ), ran


# DBOS's `test_fork_steps`-style re-execution of changed steps, killed: the
# step `b` reads K from the environment, so a process given another K runs
# under `on_change="rerun"` from `b`'s first position, discarding the
# records after it; each attempt under its own level, killed in a step.
RERUN_FLOW = """
import os, signal
import durable

K = int(os.environ["K"])


def count(name, i):
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write(f"{name}{i}\\n")
    if os.environ.get("KILL_AT") == str(i):
        os.kill(os.getpid(), signal.SIGKILL)


@durable.step
def a(i):
    count("a", i)
    return i


@durable.step
def b(i):
    count("b", i)
    return i * K


@durable.workflow(run_id="r1", on_change="rerun")
def wf():
    return [a(0), a(1)] + [b(i) for i in range(2, 6)]
"""

RERUN = """
import os, flow
print("value", flow.wf.with_options(durability=os.environ["LEVEL"])())
"""


@pytest.mark.parametrize("levels", [("fsync", "none", "batch", "fsync"), ("batch", "fsync", "none", "batch"),
                                    ("none", "batch", "fsync", "none")])  # fmt: skip
def test_dbos_rerun_of_a_changed_step_killed_under_each_level(
    tmp_path: Path, levels: tuple[str, ...]
) -> None:
    (tmp_path / "flow.py").write_text(RERUN_FLOW)
    plan = [("1", "4"), ("2", "3"), ("2", "4"), ("2", "")]
    said = run_each(
        [
            (tmp_path, RERUN, {"LEVEL": lvl, "K": k, "KILL_AT": at})
            for lvl, (k, at) in zip(levels, plan, strict=True)
        ]
    )
    assert [out.strip() for out in said] == ["", "", "", "value [0, 1, 4, 6, 8, 10]"], said
    ran = (tmp_path / "count").read_text().split()
    assert ran == ["a0", "a1", "b2", "b3", "b4", "b2", "b3", "b3", "b4", "b4", "b5"], ran


# DBOS's durable sleep (`DBOS.sleep`, tests/test_dbos.py `test_sleep`) and a
# process killed in it, under each level in turn: the wake-up time is
# recorded before the sleep begins, so each resume sleeps only what is
# left by its clock (a fake one, an hour from 1_700_000_000: 1000 s later,
# then 3000 s later), never the hour again.
SLEEP_FLOW = """
import os, signal
import durable
from durable.testing import fake_clock


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
    return x + 1


@durable.workflow(run_id="r1")
def wf():
    x = a()
    durable.sleep(3600)
    return b(x)


with fake_clock(1_700_000_000 + int(os.environ["AFTER"])) as clock:
    if os.environ.get("KILL"):
        clock.sleep = lambda s: (count(f"slept {s:.0f}"), os.kill(os.getpid(), signal.SIGKILL))
    value = wf.with_options(durability=os.environ["LEVEL"])()
    print("value", value, "slept", [round(s) for s in clock.slept])
"""


def test_dbos_sleep_killed_under_each_level_sleeps_what_is_left(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(SLEEP_FLOW)
    said = run_each([
        (tmp_path, "import flow", {"LEVEL": "none", "AFTER": "0", "KILL": "1"}),
        (tmp_path, "import flow", {"LEVEL": "batch", "AFTER": "1000", "KILL": "1"}),
        (tmp_path, "import flow", {"LEVEL": "fsync", "AFTER": "3000"}),
    ])  # fmt: skip
    assert [s.strip() for s in said] == ["", "", "value 2 slept [600]"], said
    assert (tmp_path / "count").read_text().splitlines() == ["a", "slept 3600", "slept 2600", "b"]
