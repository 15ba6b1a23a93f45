"""A step record written by an older durable, or damaged, never matches a
call: one of format 1 without an argument digest, or a row missing fields,
is refused (nothing executed, the message says why), and re-run under
on_change="rerun". Each record is written by hand on disk, in place of the
one a real run wrote."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgpack
import pytest

import durable
from durable._storage.records import FORMAT_1, seal_record, unseal

KEY = "steps/00000000"


def flow(store: durable.Store, ran: Counter[str]) -> durable.Workflow[[int, bool], int]:
    @durable.step
    def double(n: int) -> int:
        ran["double"] += 1
        return n * 2

    @durable.step
    def check(n: int, fail: bool) -> int:
        ran["check"] += 1
        if fail:
            raise RuntimeError("down")
        return n

    @durable.workflow(store=store, run_id="old", name="old")
    def old(n: int, fail: bool) -> int:
        return check(double(n), fail)

    return old


def rewrite(store: durable.Store, row: list[object]) -> None:
    """The record of position 0 replaced by `row`, sealed as durable seals one."""
    store.replace_record("old", "old", KEY, seal_record(msgpack.packb(row), None))


def recorded_row(store: durable.Store) -> list[object]:
    raw = store.load_records("old", "old")[KEY]
    row = msgpack.unpackb(unseal(raw, None, run_id="old", position=0, name=KEY))
    assert isinstance(row, list)
    return row


def test_a_record_of_format_1_without_an_argument_digest_is_refused_then_rerun(
    tmp_path: Path,
) -> None:
    store = durable.open_store(tmp_path / "store")
    ran: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        flow(store, ran)(3, fail=True)
    row = recorded_row(store)
    # Format 1: no argument bytes (the last field); the digest left nil, as
    # records were before every call kept one.
    rewrite(store, [FORMAT_1, *row[1:5], None, *row[6:-1]])
    with pytest.raises(durable.DefinitionChangedError) as refused:
        flow(store, ran)(3, fail=False)
    message = str(refused.value)
    assert "its record has no argument digest (written by an older version of durable" in message
    assert "arguments changed" not in message  # nothing about the call changed
    assert ran == Counter({"double": 1, "check": 1})  # refused: nothing executed
    rerun = flow(store, ran).with_options(on_change="rerun")
    assert rerun(3, fail=False) == 6
    assert ran == Counter({"double": 2, "check": 2})  # run again from the record


def test_a_record_missing_its_fingerprint_is_refused_as_damaged(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")
    ran: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        flow(store, ran)(3, fail=True)
    row = recorded_row(store)
    rewrite(store, [FORMAT_1, *row[1:4]])  # position, kind, name: no fingerprint on
    with pytest.raises(durable.CorruptRecordError) as refused:
        flow(store, ran)(3, fail=False)
    assert refused.value.position == 0
    assert ran == Counter({"double": 1, "check": 1})  # nothing replayed, nothing executed


def test_a_record_with_a_nil_fingerprint_never_matches(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "store")
    ran: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        flow(store, ran)(3, fail=True)
    row = recorded_row(store)
    rewrite(store, [*row[:4], "", *row[5:]])  # the fingerprint blank
    with pytest.raises(durable.DefinitionChangedError, match="code changed"):
        flow(store, ran)(3, fail=False)
    assert ran == Counter({"double": 1, "check": 1})
    assert flow(store, ran).with_options(on_change="rerun")(3, fail=False) == 6
    assert ran == Counter({"double": 2, "check": 2})


ARTIFACTS = 1 + 12  # the row's artifacts field (`StepRecord.to_bytes`)


def test_an_artifact_entry_without_its_mtime_is_changed_not_present(tmp_path: Path) -> None:
    # verify="mtime" keeps no digest of a file whose mtime is known: an entry
    # that lost its mtime (older or damaged record) has nothing to compare,
    # and None == None took a rewritten file of the same size for present.
    store = durable.open_store(tmp_path / "store")
    out, ran = tmp_path / "out.txt", Counter[str]()

    @durable.step(verify="mtime")
    def produce(text: str) -> str:
        ran["produce"] += 1
        out.write_text(text)
        durable.artifact(out)
        return text

    @durable.step
    def check(text: str, fail: bool) -> str:
        ran["check"] += 1
        if fail:
            raise RuntimeError("down")
        return out.read_text()

    @durable.workflow(store=store, run_id="old", name="old")
    def old(text: str, fail: bool) -> str:
        return check(produce(text), fail)

    with pytest.raises(RuntimeError):
        old("abc", fail=True)
    row = recorded_row(store)
    (entry,) = row[ARTIFACTS]  # type: ignore[misc]
    assert entry["verify"] == "mtime" and entry["digest"] is None and entry["mtime"] is not None
    rewrite(store, [*row[:ARTIFACTS], [{**entry, "mtime": None}], *row[ARTIFACTS + 1 :]])
    out.write_text("xyz")  # rewritten, the same size
    assert old("abc", fail=False) == "abc"  # made again, not the rewritten file
    assert ran == Counter({"produce": 2, "check": 2})


def test_a_late_single_without_an_argument_digest_is_no_copy_of_the_segments() -> None:
    # Two records of format 1 without a digest, alike but for their output:
    # None == None told them one call, and the disagreeing single was dropped
    # as a late copy instead of failing closed (a missing digest never matches).
    from durable._storage.segments import _late_copy

    def row(value: int) -> bytes:
        return msgpack.packb([FORMAT_1, 1, "step", "work", "fp", None, "msgpack",
                              msgpack.packb(value), None, True, 1.0, 2.0, [], [], {}])  # fmt: skip

    held, single = seal_record(row(10), None), row(20)
    assert not _late_copy(single, held, None, "r", "steps/00000001")
    digest = row(10).replace(b"\xc0", msgpack.packb("d" * 64), 1)  # the same rows, with a digest
    assert msgpack.unpackb(digest)[5] == "d" * 64
    with_digest = row(20).replace(b"\xc0", msgpack.packb("d" * 64), 1)
    assert _late_copy(with_digest, seal_record(digest, None), None, "r", "steps/00000001")
