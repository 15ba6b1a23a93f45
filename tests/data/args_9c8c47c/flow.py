"""A workflow whose store (`store/`, next to this file) was recorded by
durable at 9c8c47c, before perf53 kept a call's canonical argument bytes
in its record (format 1 rows: a digest each): tests/test_perf53_replay.py
resumes it (`resume.py`) with the current code. Regenerate never."""

import os

import durable


def note(name: str) -> None:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\n")


@durable.step
def one(i):
    note("one")
    return i


@durable.step
def pair(a, b=2.5):
    note("pair")
    return [a, b]


@durable.step
def text(s):
    note("text")
    return s


@durable.workflow(run_id="args")
def flow(shift: int = 0) -> None:
    for i in (0, 1, -7, 2**40):
        one(i)
    pair(3)
    pair(3, None)
    text("t")
    one(5 + shift)
    one(6)
    durable.suspend("recorded at 9c8c47c: resumed by the test")
