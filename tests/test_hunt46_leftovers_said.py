"""The lease holder of a run deletes what other incarnations of the run left
in the store (the late writes of a run removed or restarted under its id:
a record, a segment, a blob that landed after the removal, in that run's
own folder, `keys.INCARNATION`). It did so silently: a user who found
objects of a run gone, or who wonders why a removed run's process reported
writes that no run has, had nothing to go by. The holder now says it, a
WARNING on the `durable` logger naming the run and how many objects went.
The late write here is the object such a write leaves (S3, moto's server)."""

from __future__ import annotations

import logging

import pytest

import durable

pytestmark = pytest.mark.slow  # moto's server

ran: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    ran.append(i)
    if i == 1 and len(ran) == 2:
        raise RuntimeError("not yet")
    return i


@durable.workflow(name="w", run_id="r")
def flow() -> list[int]:
    return [part(i) for i in range(2)]


def test_the_holder_says_it_deleted_another_incarnations_leftovers(
    s3_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(RuntimeError, match="not yet"):
        flow.with_options(store=durable.open_store(s3_url)).run()  # part 0 recorded
    store = durable.open_store(s3_url)
    late = "w/r/inc-00000000000000aa/steps/00000001"  # a removed run's late record
    store.put(late, b"a late write")
    with caplog.at_level(logging.WARNING, logger="durable"):
        assert flow.with_options(store=store).resume("r").value == [0, 1]
    assert ran == [0, 1, 1]
    assert late not in store.list("w/r/")
    said = [r.getMessage() for r in caplog.records if "another incarnation" in r.getMessage()]
    assert len(said) == 1 and "run 'r' of 'w'" in said[0] and "1 object" in said[0], said
