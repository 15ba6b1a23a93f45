"""A step's retry budget belongs to its call: a run stopped between the tries
of one call goes on with the tries left only for that same call. A resume
with other arguments, or with the step's code fixed, makes another call at
that position, with a budget of its own (as a `loop_over` item's kept
budget is its own item's), never the tries the old call left."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from tests.scripts import run_in


def test_a_resume_with_other_arguments_gets_a_budget_of_its_own(store: durable.Store) -> None:
    tries: list[int] = []

    @durable.step(retries=1, retry_delay=0)
    def flaky(x: int) -> int:
        tries.append(x)
        if x == 1:
            if tries.count(1) == 2:
                raise KeyboardInterrupt  # the run stops between its tries
            raise ValueError("always for 1")
        if tries.count(x) == 1:
            raise ValueError("once for 2")  # a second try succeeds
        return x * 10

    @durable.workflow(run_id="r1", store=store)
    def wf(x: int) -> int:
        return flaky(x)

    with pytest.raises(KeyboardInterrupt):
        wf(1)
    assert wf.resume("r1", x=2).value == 20  # was: ValueError("once for 2"), one try only
    assert tries == [1, 1, 2, 2]


def test_the_same_call_still_goes_on_with_the_tries_left(store: durable.Store) -> None:
    tries: list[int] = []

    @durable.step(retries=1, retry_delay=0)
    def flaky(x: int) -> int:
        tries.append(x)
        if len(tries) == 2:
            raise KeyboardInterrupt
        raise ValueError("always")

    @durable.workflow(run_id="r2", store=store)
    def wf(x: int) -> int:
        return flaky(x)

    with pytest.raises(KeyboardInterrupt):
        wf(1)
    with pytest.raises(ValueError, match="always"):
        wf.resume("r2")  # one try left of two: the try that was stopped made no record
    assert tries == [1, 1, 1]


SCRIPT = """
import os, durable

def tried():
    with open(os.environ["COUNT_FILE"], "a") as f:
        f.write("try\\n")
    return len(open(os.environ["COUNT_FILE"]).read().split())

@durable.step(retries=1, retry_delay=0)
def flaky():
    n = tried()
    if n == 2:
        os.kill(os.getpid(), 9)
    if n <= 3:  # FIXED: fails once more, then works
        raise ValueError("broken")
    return "ok"

@durable.workflow(run_id="r3")
def wf():
    return flaky()

print("value", wf())
"""


@pytest.mark.slow
def test_a_fixed_step_resumed_after_kill_gets_a_budget_of_its_own(tmp_path: Path) -> None:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT.replace("if n <= 3:  # FIXED", "if True:  # BROKEN"))
    run_in(tmp_path, "flow.py")  # try 1 fails, try 2 is killed
    assert (tmp_path / "count").read_text().split() == ["try", "try"]
    script.write_text(SCRIPT)
    out = run_in(tmp_path, "flow.py", DURABLE_ON_CHANGE="rerun")
    assert "value ok" in out  # was: ValueError: broken, after one try
    assert len((tmp_path / "count").read_text().split()) == 4
