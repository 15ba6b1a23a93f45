"""A workflow whose store (`store/`, next to this file) was recorded by
durable before issue 13 (records sealed with SHA-256): tests/test_codec.py
replays it with the current code. Regenerate never: it is the old format."""

import os
import sys

import durable


def note(name: str) -> None:
    with open(os.environ["FLOW_COUNTS"], "a") as f:
        f.write(name + "\n")


@durable.step
def plain(n: int) -> dict:
    note("plain")
    return {"n": n, "items": [1, 2.5, None, "x", b"y"]}


@durable.step
def pickled(n: int) -> tuple:
    note("pickled")
    return (n, {1, 2})


@durable.step
def last(n: int) -> int:
    note("last")
    return n * 10


@durable.workflow(run_id="old")
def flow(n: int = 3) -> list:
    a, b = plain(n), pickled(n)
    if os.environ.get("FLOW_SUSPEND"):
        durable.suspend("recorded by the old format")
    return [a, list(b[1]), last(n)]


if __name__ == "__main__":
    # The definition's fingerprint covers durable's own decorator, which has
    # changed since: the test accepts the recorded steps deliberately.
    chosen = flow.with_options(rebase=True) if os.environ.get("FLOW_REBASE") else flow
    try:
        print(chosen.run())
    except durable.Suspended:
        print("suspended")
    sys.exit(0)
