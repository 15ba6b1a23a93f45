"""A fifth round of the peers' own test cases, ported to durable's API:
DBOS Transact (tests/test_failures.py error serialization,
tests/test_workflow_introspection.py child reruns and step histories),
LangGraph (libs/langgraph/tests/test_time_travel.py: replays and forks
around interrupts) and joblib (joblib/test/test_memory.py cache validation).

Each test says which peer test it ports and, where durable's contract
(DESIGN.md §2) differs on purpose, how it was adapted. Executions are
counted by the step bodies themselves; tests/test_peer_ports.py,
test_peer_ports_more.py, test_peer_ports_third.py and
test_peer_ports_fourth.py hold the earlier ports."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from pathlib import Path

import pytest

import durable

# -- DBOS: tests/test_failures.py ---------------------------------------------


class BadException(Exception):
    """test_failures.py's BadException: it pickles, but its __init__ takes
    two arguments where unpickling passes one, so it cannot be unpickled."""

    def __init__(self, one: int, two: int) -> None:
        super().__init__(f"Message: {one}, {two}")


def test_dbos_workflow_error_serialization(store: durable.Store) -> None:
    """test_workflow_error_serialization: a step raising an exception that
    cannot be unpickled. The caller gets the exception itself; the run is
    listed as failed with the error, and its step's history holds it; the
    next call runs the step again (a failed step is no outcome)."""
    ran: list[int] = []

    @durable.step
    def step() -> None:
        ran.append(1)
        raise BadException(1, 2)

    @durable.workflow(store=store, run_id="bad")
    def workflow() -> None:
        step()

    for _ in range(2):
        with pytest.raises(BadException, match="Message: 1, 2"):
            workflow()
    [info] = workflow.runs()
    assert (info.status, info.error) == ("failed", "BadException: Message: 1, 2")
    [failed] = workflow.history("bad")[1:]
    assert failed.status == "failed" and failed.error == "BadException: Message: 1, 2"
    assert [f.type for f in failed.failures] == ["BadException", "BadException"]
    assert ran == [1, 1]


def refuse_once(item: tuple[str, int]) -> int:
    """An item of a process pool: logs itself, and item 1 raises a
    BadException while the flag file exists."""
    log, i = item
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{i}\n".encode())
    os.close(fd)
    if i == 1 and Path(log + ".fail").exists():
        raise BadException(1, 2)
    return i * 10


refuse_once_step = durable.step(name="refuse_once")(refuse_once)


@pytest.mark.slow
def test_dbos_workflow_error_serialization_in_a_process_pool(tmp_path: Path) -> None:
    """test_workflow_error_serialization with the step run over items on a
    process pool (DBOS queues): the worker's BadException cannot be
    unpickled in the workflow process. The block fails with the item's
    error named by its type and message, and the item named (fan-out.md,
    "Failures"), not with a TypeError from BadException.__init__; the items
    kept are not run again, and the next call runs item 1 only."""
    log = str(tmp_path / "log")
    Path(log + ".fail").touch()
    items = [(log, i) for i in range(3)]

    @durable.workflow(store=str(tmp_path / "store"), run_id="pooled")
    def fan(items: list[tuple[str, int]]) -> list[int]:
        fork = multiprocessing.get_context("fork")
        with cf.ProcessPoolExecutor(1, mp_context=fork) as pool:
            return durable.loop_over(refuse_once_step, items, executor=pool, checkpoint_items=True)

    with pytest.raises(Exception) as caught:
        fan(items)
    text = str(caught.value) + " ".join(getattr(caught.value, "__notes__", []))
    assert "BadException: Message: 1, 2" in text, repr(caught.value)
    assert "item 1 (of 3) of loop_over(refuse_once) failed" in text
    [block] = fan.history("pooled")[1:]
    assert block.error is not None and "BadException: Message: 1, 2" in block.error
    Path(log + ".fail").unlink()
    assert fan(items) == [0, 10, 20]
    assert sorted(Path(log).read_text().split()) == ["0", "1", "1", "2"]

