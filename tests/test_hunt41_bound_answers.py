"""An answer given twice (a double click, a webhook delivered again, two
reviewers of the same round) landed at the next wait of its name: answers
carried no position, and a resume gave its value to the first wait without
an answer, which by then was the next round's. An answer may now name the
wait it answers (`inputs={"name@POSITION": value}`, the position the
`Suspended` and `durable show` give): only that wait takes it; once that
wait is answered, the same value again is a repeat that changes nothing,
and another value is refused before anything runs."""

from __future__ import annotations

import uuid

import pytest

import durable

revised: list[int] = []


@durable.step
def revise(round_: int) -> int:
    revised.append(round_)
    return round_


@durable.workflow
def review_loop() -> str:
    for round_ in range(3):
        if durable.wait_for("decision") == "approve":
            return f"approved after {round_} revisions"
        revise(round_)
    return "gave up"


def _suspended(call: object) -> durable.Suspended:
    with pytest.raises(durable.Suspended) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_an_answer_given_twice_lands_at_the_next_round_unless_bound() -> None:
    """The fault, as documented (one answer, the first wait without one),
    then the same two resumes, bound to the wait they answer."""
    flow = review_loop.with_options(store=f"memory://h41-{uuid.uuid4().hex}", run_id="r")
    revised.clear()
    first = _suspended(flow)
    assert (first.waiting_for, first.position) == ("decision", 0)
    answer = {"decision": "reject"}
    assert _suspended(lambda: flow.resume("r", inputs=answer)).position == 2
    # The same answer again, meant for round 1: taken by round 2.
    assert _suspended(lambda: flow.resume("r", inputs=answer)).position == 4
    assert revised == [0, 1]

    flow = flow.with_options(run_id="b")
    revised.clear()
    at = _suspended(flow).position
    bound = {f"decision@{at}": "reject"}
    assert _suspended(lambda: flow.resume("b", inputs=bound)).position == 2
    again = _suspended(lambda: flow.resume("b", inputs=bound))  # a repeat: used up
    assert again.position == 2 and revised == [0]
    with pytest.raises(durable.ConfigurationError, match=r"position 0 .* answered"):
        flow.resume("b", inputs={"decision@0": "approve"})  # another value for round 1
    with pytest.raises(durable.ConfigurationError, match=r"position 1, which is not a wait_for"):
        flow.resume("b", inputs={"decision@1": "approve"})  # the revision's position
    with pytest.warns(UserWarning, match=r"given for the wait at position 4"):
        early = _suspended(lambda: flow.resume("b", inputs={"decision@4": "approve"}))
    assert early.position == 2 and revised == [0]  # not taken by round 2
    done = flow.resume("b", inputs={"decision@2": "approve"})
    assert done.value == "approved after 1 revisions" and revised == [0]
    # A completed run: the same answer is a repeat, another is refused.
    assert flow.resume("b", inputs={"decision@2": "approve"}).value == done.value
    with pytest.raises(durable.ConfigurationError, match=r"position 2 .* answered"):
        flow.resume("b", inputs={"decision@2": "reject"})
    assert revised == [0]


@durable.workflow
def inner() -> str:
    return str(durable.wait_for("decision"))


@durable.workflow
def outer() -> str:
    return inner() + "/" + str(durable.wait_for("decision"))


def test_a_bound_answer_is_not_taken_by_a_child_runs_wait() -> None:
    """Position 1 of the parent is its own wait; the child's wait (its
    position 0, in run `c.0`) is answered unbound, as before."""
    flow = outer.with_options(store=f"memory://h41c-{uuid.uuid4().hex}", run_id="c")
    waiting = _suspended(flow)
    assert (waiting.child, waiting.position) == ("c.0", 0)
    with pytest.warns(UserWarning, match=r"at position 0; .* at position 1 of run 'c'"):
        again = _suspended(lambda: flow.resume("c", inputs={"decision@1": "parent"}))
    assert (again.child, again.position) == ("c.0", 0)
    assert _suspended(lambda: flow.resume("c", inputs={"decision": "child"})).position == 1
    assert flow.resume("c", inputs={"decision@1": "parent"}).value == "child/parent"


def test_the_command_line_reads_an_input_bound_to_a_position() -> None:
    """`durable run ... --resume --input decision@2=reject`."""
    from durable._cli.values import UsageError, parse_vars

    assert parse_vars(["decision@2=reject", "ok@3.0.1=1"], flag="--input") == {
        "decision@2": "reject", "ok@3.0.1": 1,
    }  # fmt: skip
    for item, flag in [("decision@x=1", "--input"), ("n@2=1", "--var"), ("@2=1", "--input")]:
        with pytest.raises(UsageError):
            parse_vars([item], flag=flag)
