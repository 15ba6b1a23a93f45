"""A segment PUT of a holder stalled between its lease check and the write
(SIGSTOP at its release's flush), or a record's PUT for a step that then
fails in the new run, landing after `durable rm` removed the run and another
process started it afresh. Segment numbers start again at 1 in the new run,
so the late segment (the removed run's next number) was read as one of the
new run's, its entries applied after the new holder's own, and a resume of
the new run replayed the removed run's outputs, for a step that failed in
the new run too (a late single record there, which nothing of the new run
replaces: `test_hunt43_late_record` covers one the new holder writes).

Each run's records now live in its incarnation's folder (`keys.INCARNATION`,
a token its manifest holds): the late PUT, played here by writing the bytes
the removed run's holder wrote where its next flush (or record) would have
put them, lands in the removed run's folder, which no reader of the new run
looks in (tests/test_hunt44_late_incarnation.py: the same with real
processes on S3)."""

from __future__ import annotations

import os

import pytest

import durable
from durable._storage.keys import segment_name

store = durable.open_store("memory://hunt43-late-segment")
executed: list[int] = []
LATE: dict[str, bytes] = {}


@durable.step
def late_seg(i: int) -> str:
    executed.append(i)
    if i == 2 and os.environ.get("HUNT43_FAIL"):
        raise RuntimeError("step 2 fails in the new run")
    return f"{i} of run {os.environ.get('HUNT43_RUN')}"


def _lands() -> None:
    """The removed run's late segment lands now, the new run under way."""
    for key, data in list(LATE.items()):
        store.put(key, data)
        del LATE[key]


@durable.workflow(name="late_seg43", run_id="r")
def late_seg43() -> list[str]:
    first = late_seg(0)
    _lands()
    return [first, late_seg(1), late_seg(2)]


@pytest.mark.parametrize("late", ["segment", "single"])
def test_a_removed_runs_late_write_is_not_replayed_in_the_new_run(
    monkeypatch: pytest.MonkeyPatch, late: str
) -> None:
    wf = late_seg43.with_options(store=store)
    monkeypatch.setenv("HUNT43_RUN", "removed")
    assert wf() == ["0 of run removed", "1 of run removed", "2 of run removed"]
    (segment,) = [k for k in store.list("") if "/segments/" in k]
    if late == "segment":  # the removed run's next flush
        LATE[segment.rsplit("/", 2)[0] + "/" + segment_name(2, 2)] = store.get(segment) or b""
    else:  # its record of step 2, which fails in the new run: nothing of that run replaces it
        single = store.peek_records("late_seg43", "r")["steps/00000002"]
        LATE[segment.rsplit("/", 2)[0] + "/steps/00000002"] = single
    wf.delete("r")
    monkeypatch.setenv("HUNT43_RUN", "new")
    monkeypatch.setenv("HUNT43_FAIL", "1")
    executed.clear()
    with pytest.raises(RuntimeError):
        wf()
    assert executed == [0, 1, 2]
    monkeypatch.delenv("HUNT43_FAIL")
    executed.clear()
    # The resume runs step 2 (it failed), nothing else, and returns the new run's outputs.
    assert wf() == ["0 of run new", "1 of run new", "2 of run new"]
    assert executed == [2]


def test_a_run_recorded_before_incarnations_reads_its_records_at_the_runs_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A manifest without a token (written by an earlier durable, played here
    by a store that makes none) keeps the old layout and its rules."""
    old = durable.open_store("memory://hunt44-before-tokens")
    old.incarnations = False
    monkeypatch.setenv("HUNT43_RUN", "old")
    monkeypatch.setenv("HUNT43_FAIL", "1")
    executed.clear()
    with pytest.raises(RuntimeError):
        late_seg43.with_options(store=old)()
    raw = old.load_manifest("late_seg43", "r")
    assert raw is not None and b"incarnation" not in raw  # the bytes an earlier durable wrote
    assert any(k.startswith("late_seg43/r/segments/") for k in old.list("late_seg43/r/"))
    late = "late_seg43/r/inc-0123456789abcdef/steps/00000001"  # another incarnation's late write
    old.put(late, old.peek_records("late_seg43", "r")["steps/00000000"])
    monkeypatch.delenv("HUNT43_FAIL")
    new = durable.open_store("memory://hunt44-before-tokens")  # a process of this version
    executed.clear()
    assert late_seg43.with_options(store=new)() == ["0 of run old", "1 of run old", "2 of run old"]
    assert executed == [2]
    assert late not in new.list("late_seg43/r/")  # its holder removed the other incarnation's
