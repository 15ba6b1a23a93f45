"""`durable.wait_for(name)`: a run suspends where it needs an input from
outside and is resumed with it; the body before it is replayed, the value
recorded at its position; a different value for a recorded input is
refused. Resume overrides of a dict or `**kwargs` parameter merge by key."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable

from .clikit import child_env, counts, write_flow
from .clikit import durable as durable_cli


def _review_flow(store: durable.Store, ran: Counter[str]) -> durable.Workflow[[str], str]:
    @durable.step
    def draft(topic: str) -> str:
        ran["draft"] += 1
        return f"draft about {topic}"

    @durable.step
    def publish(text: str, decision: str) -> str:
        ran["publish"] += 1
        return f"{text}: {decision}"

    @durable.workflow(store=store, run_id="r1")
    def review(topic: str) -> str:
        text = draft(topic)
        decision = durable.wait_for("reviewer_decision")
        return publish(text, decision)

    return review


def test_the_run_suspends_then_continues_with_the_input(store: durable.Store) -> None:
    ran: Counter[str] = Counter()
    review = _review_flow(store, ran)
    with pytest.raises(durable.Suspended, match="reviewer_decision"):
        review("cats")
    (info,) = review.runs()
    assert info.status == "suspended" and "reviewer_decision" in (info.reason or "")
    with pytest.raises(durable.Suspended):  # resumed without the input: waits again
        review.resume("r1")
    assert ran == Counter(draft=1)

    done = review.resume("r1", inputs={"reviewer_decision": "approved"})
    assert done.value == "draft about cats: approved"
    assert (done.steps_replayed, done.steps_executed) == (1, 2)  # draft; the input, publish
    assert ran == Counter(draft=1, publish=1)
    kinds = [(s.kind, s.name, s.status) for s in review.history("r1")[1:]]
    assert kinds[1] == ("input", "reviewer_decision", "completed")

    # later replays return the recorded value; the same value again is accepted
    assert review("cats") == "draft about cats: approved"
    again = review.resume("r1", inputs={"reviewer_decision": "approved"})
    assert again.value == "draft about cats: approved"
    assert ran == Counter(draft=1, publish=1)


def test_a_misspelt_input_warns_and_the_run_waits_again(store: durable.Store) -> None:
    """LangGraph raises on a resume value for an unknown interrupt; durable
    cannot know the names of later waits, but a run that suspends again
    while no wait took the inputs given says so."""
    ran: Counter[str] = Counter()
    review = _review_flow(store, ran)
    with pytest.raises(durable.Suspended):
        review("cats")
    with pytest.warns(UserWarning, match=r"no wait took the inputs .*'reviewer_decison'"):
        with pytest.raises(durable.Suspended, match="reviewer_decision"):
            review.resume("r1", inputs={"reviewer_decison": "approved"})
    assert ran == Counter(draft=1)
    assert review.resume("r1", inputs={"reviewer_decision": "ok"}).value == "draft about cats: ok"
    assert ran == Counter(draft=1, publish=1)


def test_a_new_value_for_a_recorded_input_is_refused(store: durable.Store) -> None:
    ran: Counter[str] = Counter()

    @durable.step
    def act(x: str) -> str:
        ran[x] += 1
        return x

    @durable.workflow(store=store, run_id="r2")
    def two_questions() -> str:
        first = act(durable.wait_for("first"))
        return first + act(durable.wait_for("second"))

    with pytest.raises(durable.Suspended, match="'first'"):
        two_questions()
    with pytest.raises(durable.Suspended, match="'second'"):
        two_questions.resume("r2", inputs={"first": "a"})
    with pytest.raises(durable.ConfigurationError, match="already recorded at position 0"):
        two_questions.resume("r2", inputs={"first": "CHANGED", "second": "b"})
    (info,) = two_questions.runs()
    assert info.status == "suspended"  # the refusal changed nothing
    assert ran == Counter(a=1)
    assert two_questions.resume("r2", inputs={"second": "b"}).value == "ab"
    assert ran == Counter(a=1, b=1)
    with pytest.raises(durable.ConfigurationError):  # also once the run completed
        two_questions.resume("r2", inputs={"second": "z"})


def _review_loop(store: durable.Store, revised: list[int]) -> durable.Workflow[[], str]:
    @durable.step
    def revise(n: int) -> int:
        revised.append(n)
        if n == 1 and revised.count(1) == 1:
            raise ConnectionError("the editor was down")  # fails once, in round 2
        return n

    @durable.workflow(store=store, run_id="loop")
    def review() -> str:
        for n in range(3):
            if durable.wait_for("decision") == "approve":
                return f"approved after {n} revisions"
            revise(n)
        return "gave up"

    return review


def _rejected_once(store: durable.Store, revised: list[int]) -> durable.Workflow[[], str]:
    """The review loop, its first round answered "reject": it waits for round 2."""
    review = _review_loop(store, revised)
    with pytest.raises(durable.Suspended):
        review()
    with pytest.raises(durable.Suspended):
        review.resume("loop", inputs={"decision": "reject"})
    return review


def test_one_answer_answers_one_wait_and_the_next_round_waits_again(
    store: durable.Store,
) -> None:
    revised: list[int] = []
    review = _review_loop(store, revised)
    with pytest.raises(durable.Suspended, match="'decision'"):
        review()
    with pytest.raises(durable.Suspended, match="'decision'"):  # round 2 waits again
        review.resume("loop", inputs={"decision": "reject"})
    assert revised == [0]
    # the run waits for round 2: another answer than round 1's is that round's
    done = review.resume("loop", inputs={"decision": "approve"})
    assert done.value == "approved after 1 revisions"
    assert revised == [0]
    decisions = [(str(s.position), s.name) for s in review.history("loop") if s.kind == "input"]
    assert decisions == [("0", "decision"), ("2", "decision")]


def test_an_answer_for_a_run_not_waiting_for_it_is_refused_at_the_latest_wait(
    store: durable.Store,
) -> None:
    revised: list[int] = []
    review = _rejected_once(store, revised)
    with pytest.raises(ConnectionError):  # round 2 rejected too; its revision fails
        review.resume("loop", inputs={"decision": "reject"})
    assert revised == [0, 1]
    # failed, not waiting: a new answer would not change the recorded round 2
    with pytest.raises(durable.ConfigurationError, match="already recorded at position 2"):
        review.resume("loop", inputs={"decision": "approve"})
    assert revised == [0, 1] and review.runs()[0].status == "failed"
    # the latest answer again is a repeat: not taken for round 3, which waits
    with pytest.raises(durable.Suspended, match="'decision'"):
        review.resume("loop", inputs={"decision": "reject"})
    assert revised == [0, 1, 1]
    done = review.resume("loop", inputs={"decision": "approve"})
    assert done.value == "approved after 2 revisions"


def test_wait_for_in_an_async_workflow(store: durable.Store) -> None:
    ran: Counter[str] = Counter()

    @durable.step
    async def double(x: int) -> int:
        ran["double"] += 1
        return 2 * x

    @durable.workflow(store=store, run_id="a1")
    async def flow() -> int:
        base = await double(1)
        return base + durable.wait_for("extra")

    with pytest.raises(durable.Suspended):
        asyncio.run(flow())
    assert asyncio.run(flow.resume("a1", inputs={"extra": 5})).value == 7
    assert ran == Counter(double=1)


def test_wait_for_outside_a_workflow_body_is_refused() -> None:
    with pytest.raises(durable.ConfigurationError, match="workflow body"):
        durable.wait_for("x")


def test_resume_overrides_merge_by_key_into_dict_and_kwargs_parameters(
    store: durable.Store,
) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    @durable.workflow(store=store, run_id="m1")
    def configured(settings: dict[str, Any] = {"retries": 1, "mode": "fast"}, **extra: Any) -> int:  # noqa: B006
        seen.append((dict(settings), dict(extra)))
        durable.suspend("look at the settings")
        return 0

    with pytest.raises(durable.Suspended):
        configured(settings={"retries": 2, "mode": "fast", "depth": 3}, tag="a", owner="me")
    with pytest.raises(durable.Suspended):
        configured.resume("m1", settings={"mode": "slow"}, tag="b")
    # defaults < recorded < overrides, per key
    assert seen[-1] == ({"retries": 2, "mode": "slow", "depth": 3}, {"tag": "b", "owner": "me"})
    with pytest.raises(durable.Suspended):
        configured.resume("m1", new_key=1)
    assert seen[-1][1] == {"tag": "b", "owner": "me", "new_key": 1}


def test_a_dict_override_merges_into_the_default_when_nothing_was_recorded(
    store: durable.Store,
) -> None:
    seen: list[dict[str, int]] = []

    @durable.workflow(store=store, run_id="m2")
    def flow(limits: dict[str, int] | None = None, opts: dict[str, int] = {"a": 1, "b": 2}) -> None:  # noqa: B006
        seen.append(opts)
        durable.suspend("again")

    with pytest.raises(durable.Suspended):
        flow()
    with pytest.raises(durable.Suspended):
        flow.resume("m2", opts={"b": 5})
    assert seen[-1] == {"a": 1, "b": 5}


WAITING = """
import os
import durable


@durable.step
def draft(topic):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("draft\\n")
    return "draft about " + topic


@durable.workflow
def review(topic: str) -> str:
    text = draft(topic)
    return text + ": " + durable.wait_for("reviewer_decision")
"""


@pytest.mark.slow
def test_the_command_line_answers_a_wait(tmp_path: Path) -> None:
    write_flow(tmp_path, WAITING)
    env = child_env(tmp_path)
    first = durable_cli(
        tmp_path, "run", "flow.py:review", "--run-id", "w1", "--var", "topic=owls", env=env
    )
    assert first.returncode == 3, first.stderr
    assert "--run-id w1 --resume --input reviewer_decision=VALUE" in first.stderr
    early = durable_cli(tmp_path, "run", "flow.py:review", "--run-id", "w2", "--var", "topic=x",
                        "--input", "reviewer_decision=yes", env=env)  # fmt: skip
    assert early.returncode == 2 and "does not exist" in early.stderr
    done = durable_cli(tmp_path, "run", "flow.py:review", "--run-id", "w1", "--resume",
                       "--input", "reviewer_decision=approved", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '"draft about owls: approved"'  # printed as JSON
    assert counts(tmp_path) == {"draft": 1}
    changed = durable_cli(tmp_path, "run", "flow.py:review", "--run-id", "w1", "--resume",
                          "--input", "reviewer_decision=rejected", env=env)  # fmt: skip
    assert changed.returncode == 2 and "already recorded" in changed.stderr


def test_a_fork_before_a_later_round_takes_a_new_answer_for_it(store: durable.Store) -> None:
    """Forking is the way the refusals point to: the fork's first wait
    without an answer takes the one supplied, though an earlier round of
    the same name has one."""
    from durable._manage.fork import fork_run

    revised: list[int] = []
    review = _rejected_once(store, revised)
    assert review.resume("loop", inputs={"decision": "approve"}).value == (
        "approved after 1 revisions"
    )
    fork_run(store, review.name, "loop", 2, new_run_id="again")  # before round 2's answer
    with pytest.raises(ConnectionError):  # round 2 rejected this time: its revision fails once
        review.resume("again", inputs={"decision": "reject"})
    with pytest.raises(durable.Suspended, match="'decision'"):  # then round 3 waits
        review.resume("again")
    assert revised == [0, 1, 1]  # round 1's revision replayed; round 2's failed once, then ran


TWO_WAITS = """
import os
import durable


@durable.step
def act(answer):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write("act-" + answer + "\\n")
    return answer


@durable.workflow
def two(topic: str) -> str:
    first = act(durable.wait_for("u"))
    return first + act(durable.wait_for("v"))
"""


@pytest.mark.slow
def test_a_fork_after_the_only_wait_of_a_name_refuses_a_new_answer_for_it(
    tmp_path: Path,
) -> None:
    """A fork not run yet takes a new answer for a name with a recorded one
    only when a wait of that name is still to come (the source reached one
    at or after the fork's position): else the answer could only replace
    the recorded one, which the fork continues with, and is refused."""
    write_flow(tmp_path, TWO_WAITS)
    env = child_env(tmp_path)

    def run(run_id: str, *args: str) -> Any:
        return durable_cli(tmp_path, "run", "flow.py:two", "--run-id", run_id, *args, env=env)

    assert run("t", "--var", "topic=x").returncode == 3
    assert run("t", "--resume", "--input", "u=U").returncode == 3  # waits for v
    for at, new in (("2", "late"), ("0", "early")):
        made = durable_cli(tmp_path, "fork", "t", "--at", at, "--new-run-id", new, env=env)
        assert made.returncode == 0, made.stderr
    refused = run("late", "--resume", "--input", "u=X", "--input", "v=V")
    assert refused.returncode == 2 and "already recorded at position 0" in refused.stderr
    assert counts(tmp_path) == {"act-U": 1}  # nothing ran
    done = run("late", "--resume", "--input", "v=V")
    assert (done.returncode, done.stdout.strip()) == (0, '"UV"'), done.stderr
    # Forked before the wait for u: its answer is for the fork to take.
    again = run("early", "--resume", "--input", "u=X", "--input", "v=W")
    assert (again.returncode, again.stdout.strip()) == (0, '"XW"'), again.stderr
    assert counts(tmp_path) == {"act-U": 1, "act-V": 1, "act-X": 1, "act-W": 1}


@pytest.mark.parametrize("inputs", ["approved", [("reviewer_decision", "approved")], {1: "x"}])
def test_inputs_that_are_not_a_mapping_of_names_are_a_clear_error(
    store: durable.Store, inputs: Any
) -> None:
    ran: Counter[str] = Counter()
    review = _review_flow(store, ran)
    with pytest.raises(durable.Suspended):
        review("cats")
    with pytest.raises(durable.ConfigurationError, match="inputs= must be a mapping"):
        review.resume("r1", inputs=inputs)
    (info,) = review.runs()
    assert info.status == "suspended" and ran == Counter(draft=1)


PAYING = """
import durable
from flow_notes import note


@durable.step
def prepare(vendor):
    note("prepare")
    return f"invoice for {vendor}"


@durable.step
def transfer(amount, decision):
    note("transfer")
    return f"sent {amount} ({decision})"


@durable.workflow
def pay(amount: int) -> str:
    prepare("acme")
    if durable.wait_for("approve") != "yes":
        return "rejected"
    return transfer(amount, "yes")
"""

NOTES = """
import os


def note(name):
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\\n")
"""


def test_an_answer_given_for_other_run_arguments_is_asked_again_under_rerun(
    tmp_path: Path,
) -> None:
    """Each call is its own process: the approval given for 100 is not
    reused for a call with 1000000 under on_change="rerun"; the run
    suspends at the wait again, and the new answer decides."""
    write_flow(tmp_path, PAYING)
    write_flow(tmp_path, NOTES, name="flow_notes.py")
    env = child_env(tmp_path)

    def run(*args: str) -> Any:
        return durable_cli(tmp_path, "run", "flow.py:pay", "--run-id", "p1", *args, env=env)

    assert run("--var", "amount=100").returncode == 3  # suspended at the wait
    done = run("--resume", "--input", "approve=yes")
    assert done.returncode == 0 and done.stdout.strip() == '"sent 100 (yes)"', done.stderr
    bigger = run("--var", "amount=1000000", "--on-change", "rerun")
    assert bigger.returncode == 3, bigger.stdout + bigger.stderr  # asked again
    assert "approve" in bigger.stderr
    assert counts(tmp_path) == {"prepare": 1, "transfer": 1}  # prepare replayed
    answered = run("--resume", "--input", "approve=no")
    assert answered.returncode == 0 and answered.stdout.strip() == '"rejected"'
    assert counts(tmp_path) == {"prepare": 1, "transfer": 1}


def test_an_answer_given_for_other_run_arguments_is_refused_under_refuse(
    store: durable.Store,
) -> None:
    """A resume overriding an argument after the wait was answered: the
    answer is not reused (refused, nothing runs); rebase keeps it."""
    fail = [True]

    @durable.step
    def transfer(amount: int) -> str:
        TRANSFERS.append(amount)
        if fail[0]:
            raise ConnectionError("the bank was down")
        return f"sent {amount}"

    @durable.workflow(store=store, run_id="p2")
    def pay(amount: int) -> str:
        durable.wait_for("approve")
        return transfer(amount)

    TRANSFERS.clear()
    with pytest.raises(durable.Suspended):
        pay(100)
    with pytest.raises(ConnectionError):
        pay.resume("p2", inputs={"approve": "yes"})
    fail[0] = False
    with pytest.raises(durable.DefinitionChangedError) as refused:
        pay.resume("p2", amount=1000000)
    assert "wait_for('approve') was answered for other arguments" in str(refused.value)
    assert TRANSFERS == [100]
    assert pay.resume("p2", amount=100).value == "sent 100"  # the same arguments: replayed
    assert TRANSFERS == [100, 100]


TRANSFERS: list[int] = []  # global: a list in a step's closure counts in its identity
