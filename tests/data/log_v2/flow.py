"""A workflow whose store (`store/`, next to this file) was recorded by
durable as of b4d7e88 (each record a CRC envelope inside a log entry that
sums it again: entry magic d7 1e): tests/test_perf50_record.py resumes it
with the current code. Regenerate never: it is the old format.

Made with: `FLOW_SUSPEND=1` and the module loaded as `log_v2_flow` (as the test loads it), on b4d7e88."""

import os

import durable

ran: list[str] = []


@durable.step
def plain(n: int) -> dict:
    ran.append("plain")
    return {"n": n, "items": [1, 2.5, None, "x", b"y"]}


@durable.step
def pickled(n: int) -> tuple:
    ran.append("pickled")
    return (n, {1, 2})


@durable.step
def last(n: int) -> int:
    ran.append("last")
    return n * 10


@durable.workflow(run_id="old", durability="none")
def flow(n: int = 3) -> list:
    a, b = plain(n), pickled(n)
    if os.environ.get("FLOW_SUSPEND"):
        durable.suspend("recorded by the old format")
    return [a, sorted(b[1]), last(n)]


if __name__ == "__main__":
    try:
        print(flow.run())
    except durable.Suspended:
        print("suspended")
