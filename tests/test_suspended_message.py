"""`durable.Suspended` says which run waits, where (the position of the
`wait_for` or `suspend()`), and the call and the command that answer it,
each as typed: the test answers a run with the call its message names (in
the process that got it) and another with the command (a shell's words)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import durable

from .clikit import DURABLE, child_env, counts

FLOW = '''
import os
import re
import sys

import durable


@durable.step
def draft(topic: str) -> str:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("draft\\n")
    return topic


@durable.workflow
def gate(topic: str) -> str:
    return draft(topic) + ": " + durable.wait_for("decision")


@durable.workflow
def approval(topic: str, decision: str | None = None) -> str:
    drafted = draft(topic)
    if decision is None:
        durable.suspend("needs a reviewer's decision")
    return f"{drafted}: {decision}"


if __name__ == "__main__":
    flow = {"gate": gate, "approval": approval}[sys.argv[1]]
    try:
        flow.with_options(run_id="r1")("owls")
    except durable.Suspended as e:
        print(e, flush=True)
        if sys.argv[2:] == ["answer"]:  # the call the message names, as written there
            call = re.search(r"\\w+\\.resume\\(.*?\\)(?=, or from a shell)", str(e))[0]
            call = call.replace("NAME=VALUE, ...", "decision='yes'").replace("VALUE", "'yes'")
            print(eval(call).value)
'''


def _suspend(tmp: Path, flow: str, *extra: str) -> list[str]:
    (tmp / "flow.py").write_text(FLOW)
    done = subprocess.run(
        [sys.executable, "flow.py", flow, *extra], cwd=tmp, env=child_env(tmp),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _shell(tmp: Path, command: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "durable"
    return subprocess.run(
        [*DURABLE, *words[1:]], cwd=tmp, env=child_env(tmp),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.slow
def test_a_wait_for_names_the_run_the_wait_and_the_call_and_command_that_answer_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    (said,) = _suspend(tmp_path, "gate")
    command = f"durable --store {store} run flow.py:gate --run-id r1 --resume --input decision=VALUE"
    assert said == (
        "run 'r1' of workflow 'flow.gate' is suspended at position 1, waiting for input "
        "'decision' (durable.wait_for). Answer it with gate.resume('r1', inputs={'decision': "
        f"VALUE}}), or from a shell: {command}"
    )
    done = _shell(tmp_path, command.replace("VALUE", "yes"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == "owls: yes"
    assert counts(tmp_path) == {"draft": 1}


@pytest.mark.slow
def test_a_suspend_names_the_run_its_position_and_the_call_and_command_that_resume_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    said, value = _suspend(tmp_path, "approval", "answer")
    command = f"durable --store {store} run flow.py:approval --run-id r1 --resume --var decision=VALUE"
    assert said == (  # the parameter the reason names (newuser45: it said NAME=VALUE)
        "run 'r1' of workflow 'flow.approval' is suspended at position 1: needs a reviewer's "
        "decision (durable.suspend). Resume it with the missing arguments as overrides: "
        f"approval.resume('r1', decision=VALUE), or from a shell: {command}"
    )
    assert value == "owls: yes"  # the call the message names answered it
    assert counts(tmp_path) == {"draft": 1}
    (said,) = _suspend(tmp_path, "gate", "answer")[:1]  # the other run, by the call too
    assert "gate.resume('r1', inputs={'decision': VALUE})" in said


def test_a_memory_store_run_is_told_the_call_only(store: durable.Store) -> None:
    """No other process sees a memory:// store: no command to give."""

    @durable.workflow(store=store, run_id="m1", name="review")
    def review() -> str:
        return str(durable.wait_for("ok"))

    with pytest.raises(durable.Suspended) as waiting:
        review()
    assert str(waiting.value) == (
        "run 'm1' of workflow 'review' is suspended at position 0, waiting for input 'ok' "
        "(durable.wait_for). Answer it with review.resume('m1', inputs={'ok': VALUE})."
    )


def test_an_async_workflow_is_told_to_await_its_resume(store: durable.Store) -> None:
    import asyncio

    @durable.workflow(store=store, run_id="a1", name="areview")
    async def areview() -> str:
        return str(durable.wait_for("ok"))

    with pytest.raises(durable.Suspended) as waiting:
        asyncio.run(areview())
    assert "Answer it with await areview.resume('a1', inputs={'ok': VALUE})." in str(waiting.value)
    assert asyncio.run(areview.resume("a1", inputs={"ok": "yes"})).value == "yes"


def test_a_suspend_inside_a_step_names_the_steps_position(store: durable.Store) -> None:
    @durable.step
    def first() -> int:
        return 1

    @durable.step
    def review() -> int:
        durable.suspend("a person looks at it")
        return 2

    @durable.workflow(store=store, run_id="s1", name="checked")
    def checked() -> int:
        return first() + review()

    with pytest.raises(durable.Suspended) as waiting:
        checked()
    assert str(waiting.value).startswith(
        "run 's1' of workflow 'checked' is suspended at position 1: a person looks at it"
    ), waiting.value
    assert [i.position for i in checked.runs()] == [1]  # where `durable runs` says it is
