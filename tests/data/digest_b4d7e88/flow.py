"""A workflow whose store (`store/`, next to this file) was recorded by
durable at b4d7e88 (before perf51 changed `identity._all_scalar_positional`):
tests/test_perf51_digest.py resumes it (`resume.py`) with the current code, and no step
may run again (every argument digest is byte-identical). Regenerate never."""

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
def two(a, b=3):
    note("two")
    return [a, b]


@durable.step
def mixed(s, x=1.5, flag=None):
    note("mixed")
    return [s, x, flag]


@durable.step
def nothing(k=5, name="k"):
    note("nothing")
    return k


@durable.workflow(run_id="digests")
def flow() -> None:
    for i in (0, 1, -7, 2**31, 10**30, 3 * 10**4400):
        one(i)
    one(True)
    one("text")
    one(i=4)
    two(1)
    two(1, 2)
    two(-1, b=2)
    mixed("é")
    mixed("s", 2.5)
    mixed(b"raw", None, True)
    nothing()
    nothing(6)
    nothing(6, "j")
    durable.suspend("recorded at b4d7e88: resumed by the test")
