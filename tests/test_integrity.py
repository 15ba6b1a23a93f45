"""Planted, altered and damaged objects are refused before they are decoded.

The attacker here can write to the store but does not know the signing key:
they can compute checksums, not HMACs."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import durable
from durable._storage.manifest import pack_manifest, read_manifest
from durable._storage.records import StepRecord, seal, unseal
from durable.testing import FakeClock
from tests.conftest import Place, rewrite_record


class Planted:
    """Unpickling this creates a file: the stand-in for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def flow(store: durable.Store, counts: Counter[str]) -> Any:
    @durable.step(name="fetch")
    def fetch(i: int) -> dict[str, int]:
        counts[f"fetch{i}"] += 1
        return {"i": i}

    @durable.workflow(name="tamper", store=store, run_id="t1")
    def run(fail: bool = False) -> list[dict[str, int]]:
        out = [fetch(i) for i in range(3)]
        if fail:
            raise RuntimeError("stop after the steps, leaving the run open")
        return out

    return run


def plant_pickle(store: durable.Store, marker: Path, key: bytes | None) -> None:
    """Replace the record at position 1 with one whose value is a pickle."""
    raw = store.load_records("tamper", "t1")["steps/00000001"]
    rec = StepRecord.from_bytes(unseal(raw, key, run_id="t1", position=1, name="steps/00000001"))
    rec.encoding, rec.value = "p", pickle.dumps(Planted(marker))
    # The attacker seals with a checksum (or a key of their own), not ours,
    # and writes where the record lives (on an object store, its segment).
    data = seal(rec.to_bytes(), None)
    rewrite_record(store, ("tamper", "t1"), "steps/00000001", data, None)


@pytest.mark.parametrize("defence", ["none", "signing key", "allow_pickle=False"])
def test_planted_pickle_is_never_loaded(place: Place, tmp_path: Path, defence: str) -> None:
    options: dict[str, Any] = {
        "none": {},
        "signing key": {"signing_key": "team-secret"},
        "allow_pickle=False": {"allow_pickle": False},
    }[defence]
    counts: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        flow(place.open(**options), counts).run(fail=True)
    marker = tmp_path / "pwned"
    plant_pickle(
        place.open(**options), marker, b"team-secret" if options.get("signing_key") else None
    )

    if defence == "none":
        # Without a defence the planted pickle runs: the threat is real.
        flow(place.open(**options), counts).run(fail=False)
        assert marker.is_file()
        return
    with pytest.raises(durable.IntegrityError) as err:
        flow(place.open(**options), counts).run(fail=False)
    assert not marker.exists()
    # The record, or on an object store the segment holding it, is refused.
    assert err.value.key.endswith("steps/00000001") or err.value.key.startswith("segments/")
    assert counts == {"fetch0": 1, "fetch1": 1, "fetch2": 1}


def test_planted_pickle_in_the_manifest_is_never_loaded(place: Place, tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = place.open(signing_key="k")
    flow(store, counts).run()
    manifest = read_manifest(store, "tamper", "t1")
    assert manifest is not None
    marker = tmp_path / "pwned"
    manifest.result_encoding, manifest.result = "p", pickle.dumps(Planted(marker))
    store.save_manifest("tamper", "t1", pack_manifest(manifest, None))
    with pytest.raises(durable.IntegrityError, match="not signed"):
        flow(place.open(signing_key="k"), counts).run()
    manifest.args_encoding, manifest.args = "p", pickle.dumps(Planted(marker))
    store.save_manifest("tamper", "t1", pack_manifest(manifest, None))
    with pytest.raises(durable.IntegrityError):
        flow(place.open(allow_pickle=False), counts).run()
    assert not marker.exists() and counts == {"fetch0": 1, "fetch1": 1, "fetch2": 1}


def every_kind(store: durable.Store, counts: Counter[str], clock: FakeClock) -> Any:
    """A run that leaves every kind of object: manifest, step records,
    failed attempts, a durable-sleep timer and a blob."""
    flaky = {"left": 1}

    @durable.step(name="big")
    def big() -> bytes:
        counts["big"] += 1
        return b"B" * 4096

    @durable.step(name="flaky", retries=1, retry_delay=0.0)
    def flaky_step() -> str:
        counts["flaky"] += 1
        if flaky["left"]:
            flaky["left"] -= 1
            raise ConnectionError("first attempt fails")
        return "ok"

    @durable.workflow(name="kinds", store=store, run_id="k1")
    def run(fail: bool = False) -> list[Any]:
        out = [big(), flaky_step()]
        durable.sleep(5)
        if fail:
            raise RuntimeError("leave the run open")
        return out

    return run


@pytest.mark.parametrize(
    "target", ["run", "steps/00000000", "attempts/00000001", "timers/00000002"]
)
def test_every_object_is_signed(place: Place, clock: FakeClock, target: str) -> None:
    counts: Counter[str] = Counter()
    store = place.open(signing_key="k", blob_threshold=1024)
    with pytest.raises(RuntimeError):
        every_kind(store, counts, clock).run(fail=True)
    records = store.load_records("kinds", "k1")
    assert {"steps/00000000", "attempts/00000001", "timers/00000002"} <= set(records)
    if target == "run":
        manifest = read_manifest(store, "kinds", "k1")
        assert manifest is not None
        store.save_manifest("kinds", "k1", pack_manifest(manifest, None))
    else:
        body = unseal(records[target], b"k", run_id="k1", position=None, name=target)
        store.replace_record("kinds", "k1", target, seal(body, b"someone else's key"))
    with pytest.raises(durable.IntegrityError) as err:
        every_kind(place.open(signing_key="k", blob_threshold=1024), counts, clock).run()
    assert err.value.key.endswith(target)
    assert counts == {"big": 1, "flaky": 2}  # nothing ran again


def test_blob_and_its_reference_are_verified(place: Place, clock: FakeClock) -> None:
    counts: Counter[str] = Counter()
    store = place.open(signing_key="k", blob_threshold=1024)
    with pytest.raises(RuntimeError):
        every_kind(store, counts, clock).run(fail=True)
    (blob_key,) = [k for k in store.list("kinds/k1/") if "/blobs/" in k]
    good = store.get(blob_key)
    assert good is not None
    # Altered in place: the content no longer matches the digest its record names.
    store.put(blob_key, seal(b"evil", b"k"))
    with pytest.raises(durable.CorruptRecordError, match="does not match its digest") as err:
        every_kind(place.open(signing_key="k", blob_threshold=1024), counts, clock).run()
    assert err.value.position == 0
    # A new, well-formed blob, and the record re-pointed at it: the record's
    # signature breaks, so the new reference is never followed.
    store.put(blob_key, good)
    forged = store.put_blob("kinds", "k1", seal(b"evil", None))
    raw = store.load_records("kinds", "k1")["steps/00000000"]
    rec = StepRecord.from_bytes(unseal(raw, b"k", run_id="k1", position=0, name="s"))
    rec.blob = forged
    store.replace_record("kinds", "k1", "steps/00000000", seal(rec.to_bytes(), None))
    with pytest.raises(durable.IntegrityError, match="not signed"):
        every_kind(place.open(signing_key="k", blob_threshold=1024), counts, clock).run()
    assert counts == {"big": 1, "flaky": 2}


def test_signed_record_moved_to_another_position_is_refused(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s", signing_key="k")
    with pytest.raises(RuntimeError):
        flow(store, counts).run(fail=True)
    records = store.load_records("tamper", "t1")
    store.replace_record("tamper", "t1", "steps/00000002", records["steps/00000000"])
    with pytest.raises(durable.CorruptRecordError, match="holds position 0") as err:
        flow(store, counts).run()
    assert err.value.position == 2


def test_signed_manifest_copied_from_another_run_is_refused(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s", signing_key="k")
    flow(store, counts).run()
    raw = store.load_manifest("tamper", "t1")
    assert raw is not None
    store.save_manifest("tamper", "t2", raw)
    with pytest.raises(durable.CorruptRecordError, match="belongs to run 't1'"):
        flow(store, counts).with_options(run_id="t2").run()


def test_signing_key_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DURABLE_SIGNING_KEY", "from-env")
    counts: Counter[str] = Counter()
    store = durable.open_store(tmp_path / "s")
    assert store.signing_key == b"from-env"
    flow(store, counts).run()
    monkeypatch.delenv("DURABLE_SIGNING_KEY")
    with pytest.raises(durable.IntegrityError, match="no signing key"):
        flow(durable.open_store(tmp_path / "s"), counts).run()


def test_allow_pickle_false_refuses_to_write_pickles(tmp_path: Path) -> None:
    store = durable.open_store(tmp_path / "s", allow_pickle=False)
    ran: list[int] = []

    @durable.step(name="as_tuple")
    def as_tuple() -> tuple[int, int]:
        ran.append(1)
        return (1, 2)

    @durable.workflow(name="np", store=store, run_id="n")
    def run() -> Any:
        return as_tuple()

    with pytest.raises(durable.SerializationError, match="allow_pickle=False") as err:
        run()
    assert err.value.step == "as_tuple"
    assert store.load_records("np", "n") == {}  # nothing a reader would refuse


def test_damaged_and_truncated_objects_name_run_position_and_key() -> None:
    body = StepRecord(3, "step", "s", "fp", None).to_bytes()
    for key in (None, b"k"):
        sealed = seal(body, key)
        for bad in (sealed[:10], sealed[:-1], sealed[:50] + b"\xff" + sealed[51:]):
            with pytest.raises(durable.CorruptRecordError) as err:
                unseal(bad, key, run_id="r", position=3, name="steps/00000003")
            assert (err.value.run_id, err.value.position, err.value.key) == (
                "r",
                3,
                "steps/00000003",
            )
            assert "run 'r'" in str(err.value) and "position 3" in str(err.value)


@pytest.mark.parametrize("key", [None, b"k"])
def test_a_flipped_bit_anywhere_in_an_envelope_is_damage(key: bytes | None) -> None:
    # Every bit of every byte, the flag byte included: always CorruptRecordError,
    # never "signed but no key" (IntegrityError) and never a body.
    sealed = seal(StepRecord(3, "step", "s", "fp", None, "m", b"\x01").to_bytes(), key)
    for offset in range(len(sealed)):
        for bit in range(8):
            bad = bytearray(sealed)
            bad[offset] ^= 1 << bit
            with pytest.raises(durable.CorruptRecordError):
                unseal(bytes(bad), key, run_id="r", position=3, name="steps/00000003")
