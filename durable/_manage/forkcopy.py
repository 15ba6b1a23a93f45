"""A fork's records: the source run's records before the fork's position,
copied as they are (sealed bodies never name their run), their blobs with
them, and the last one optionally replaced by `mutate`'s value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._storage import codec
from .._storage.base import Store
from .._storage.keys import (
    Position,
    blob_name,
    is_step_record,
    parse_name,
    position_key,
    position_of,
    record_name,
)
from .._storage.records import StepRecord, keep_encoded, seal, unseal
from .._storage.storedread import load_stored
from ..errors import ConfigurationError, CorruptRecordError, SerializationError


def copy_records(
    store: Store,
    workflow: str,
    runs: tuple[str, str],
    records: dict[str, bytes],
    at: int,
    mutate: Callable[[Any], Any] | None,
) -> None:
    """The source's records before `at` into the new run (the last one
    through `mutate`, when given)."""
    run_id, new_id = runs
    for name, data in sorted(records.items()):
        if mutate is not None and name == record_name(at - 1):
            replaced = _mutated(store, workflow, runs, name, data, mutate)
            store.save_record(workflow, new_id, name, replaced)
        elif before(name, at):
            _copy_record(store, workflow, run_id, new_id, name, data)


def before(name: str, at: int) -> bool:
    """Whether a record belongs before position `at` (`2.0.1` belongs to 2)."""
    parsed = parse_name(name)
    return parsed is not None and position_key(parsed[1]) < (at,)


def _copy_record(
    store: Store, workflow: str, source: str, target: str, name: str, data: bytes
) -> None:
    # Sealed bodies never name their run, so they (and their signatures) copy as they are.
    if is_step_record(name):
        rec = decode_record(store, source, name, data)
        if rec.blob is not None:
            copy_blob(store, workflow, (source, target), rec.blob, rec.position)
    store.save_record(workflow, target, name, data)


def copy_blob(
    store: Store, workflow: str, runs: tuple[str, str], digest: str, position: Position | None
) -> None:
    blob = store.get_blob(workflow, runs[0], digest)
    if blob is None:
        raise CorruptRecordError(runs[0], position, blob_name(digest), "blob missing")
    store.put_blob(workflow, runs[1], blob)


def decode_record(store: Store, run_id: str, name: str, data: bytes) -> StepRecord:
    pos = position_of(name)
    body = unseal(data, store.signing_key, run_id=run_id, position=pos, name=name)
    try:
        return StepRecord.from_bytes(body)
    except Exception as e:
        raise CorruptRecordError(run_id, pos, name, f"undecodable: {e}") from e


def _mutated(
    store: Store,
    workflow: str,
    runs: tuple[str, str],
    name: str,
    data: bytes,
    mutate: Callable[[Any], Any],
) -> bytes:
    source, target = runs
    rec = decode_record(store, source, name, data)
    if not rec.persisted or rec.encoding is None:
        raise ConfigurationError(
            f"position {rec.position} ({rec.name}) kept no value (persist=False), "
            "so there is nothing to mutate; fork one position later or earlier"
        )
    key = f"{workflow}/{source}/{name}"
    where = (workflow, source)
    old = load_stored(store, where, rec.encoding, rec.value, rec.blob, position=rec.position, name=key)
    value = mutate(old)
    try:
        rec.encoding, encoded = codec.encode_value(value, allow_pickle=store.allow_pickle)
    except Exception as e:
        raise SerializationError(
            f"mutate() for {rec.name}", type(value).__qualname__, str(e),
            advice="Make mutate() return plain data (or something cloudpickle can "
            "carry). Nothing was forked; the source run is unchanged.",
        ) from e  # fmt: skip
    rec.value, rec.blob = keep_encoded(store, (workflow, target), encoded)
    rec.extra = {**rec.extra, "mutated": True}
    return seal(rec.to_bytes(), store.signing_key)
