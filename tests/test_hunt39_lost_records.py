"""Some, not all, of the records a run's last attempt ended with are gone
from the store (a late delete, an object lost on S3, a truncated local log,
a deleted segment). The resume ran the missing finished steps again,
silently; it now refuses (`CorruptRecordError` naming how many are missing
and where) and runs nothing. Deleting the object of a record the run
refused as damaged still runs just that step again."""

from __future__ import annotations

from pathlib import Path

import pytest

import durable
from durable._manage.fork import fork_run
from tests import test_hunt39_killed_attempt as killed
from tests.conftest import Place, rewrite_record

ran: list[int] = []
fail_at: list[int] = []


@durable.step(name="part")
def part(i: int) -> int:
    ran.append(i)
    if i in fail_at:
        raise RuntimeError("not yet")
    return i * 10


@durable.workflow(name="w", run_id="r")
def flow() -> int:
    return sum(part(i) for i in range(4))


def _failed_run(store: durable.Store) -> None:
    """Parts 0, 1, 2 recorded; part 3 failed: the attempt ended with 3."""
    ran.clear()
    fail_at[:] = [3]
    with pytest.raises(RuntimeError):
        flow.with_options(store=store).run()
    fail_at.clear()
    ran.clear()


def test_a_resume_missing_some_of_the_records_its_run_ended_with_refuses(place: Place) -> None:
    """An object store loses record 1 (a deleted object, or its entry in a
    segment); a local log is cut short inside record 2's entry."""
    store = place.open()
    _failed_run(store)
    if place.kind == "local":
        log = Path(place.url) / "w" / "r" / "records.log"
        data = log.read_bytes()
        log.write_bytes(data[: data.index(b"steps/00000002") + 3])
    else:
        rewrite_record(store, ("w", "r"), "steps/00000001", None, None)
    with pytest.raises(durable.CorruptRecordError) as e:
        flow.with_options(store=place.open(own_client=True)).resume("r")
    assert ran == []
    text = str(e.value)
    assert "3 finished operations" in text and "only 2 of their records" in text
    at = 2 if place.kind == "local" else 1
    assert f"none at position {at})" in text and f"durable fork r --workflow w --at {at}`" in text
    ran.clear()
    # The copy the error advises runs the lost step and those after it, once each.
    flow.with_options(store=store).fork("r", at=at, new_run_id="f")
    assert flow.with_options(store=place.open(own_client=True)).resume("f").value == 60
    assert ran == list(range(at, 4))


def test_a_damaged_record_whose_object_was_deleted_runs_just_that_step_again(
    place: Place,
) -> None:
    if place.kind == "local":
        pytest.skip("a local log's record is no object of its own to delete")
    store = place.open()
    _failed_run(store)
    [raw] = [v for k, v in store.load_records("w", "r").items() if k == "steps/00000001"]
    rewrite_record(store, ("w", "r"), "steps/00000001", raw[:-3] + b"xyz", None)
    with pytest.raises(durable.CorruptRecordError, match="position 1"):
        flow.with_options(store=place.open(own_client=True)).resume("r")
    assert ran == []
    rewrite_record(store, ("w", "r"), "steps/00000001", None, None)  # as the error advises
    assert flow.with_options(store=place.open(own_client=True)).resume("r").value == 60
    assert ran == [1, 3]


def test_a_rerun_that_discards_records_completes_and_replays(place: Place) -> None:
    """The note a rerun lowers before its drop (`finished.lower`: a manifest
    read and written mid-attempt) leaves the run's own writes working."""
    store = place.open()
    _failed_run(store)
    killed.executed()
    assert killed.fixed.with_options(store=store).resume("r").value == 1000
    assert killed.executed() == [0, 1, 2, 3, 4]
    assert killed.fixed.with_options(store=place.open(own_client=True)).resume("r").value == 1000
    assert killed.executed() == []


def test_the_history_of_a_completed_run_names_the_lost_record() -> None:
    store = durable.open_store("memory://hunt39-history")
    ran.clear()
    assert flow.with_options(store=store)() == 60
    rewrite_record(store, ("w", "r"), "steps/00000002", None, None)
    with pytest.raises(durable.CorruptRecordError, match=r"only 3 are in the store \(none at position 2\)"):
        flow.with_options(store=store).history("r")


def test_a_fork_missing_a_record_it_copied_refuses(place: Place) -> None:
    """A fork notes the records it copied: one lost before its first resume
    is refused, not run again."""
    store = place.open()
    ran.clear()
    assert flow.with_options(store=store)() == 60
    fork_run(store, "w", "r", 3, new_run_id="f")  # as `durable fork`: nothing runs
    if place.kind == "local":  # a deletion appended to the log
        store.drop_records("w", "f", ["steps/00000001"])
    else:
        rewrite_record(store, ("w", "f"), "steps/00000001", None, None)
    ran.clear()
    with pytest.raises(durable.CorruptRecordError, match="none at position 1"):
        flow.with_options(store=place.open(own_client=True)).resume("f")
    assert ran == []


def test_a_run_under_durability_none_runs_a_lost_record_again(tmp_path: Path) -> None:
    """Under "none" a record reaches the disk whenever the OS writes it
    back: a power loss may take it, nobody having deleted it, and the
    step runs again on resume (docs/storage.md). Such a run notes nothing
    to refuse with."""
    store = durable.open_store(tmp_path / "s", durability="none")
    _failed_run(store)
    store.drop_records("w", "r", ["steps/00000001"])  # as a power loss might
    again = durable.open_store(tmp_path / "s", durability="none")
    assert flow.with_options(store=again).resume("r").value == 60
    assert ran == [1, 3]
