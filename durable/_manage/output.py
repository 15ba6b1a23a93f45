"""A recorded step's output as `history()` and `durable show` see it: a
preview that never fails (a damaged, unstored or refused value says so),
and a loader that reads the value itself only when called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._storage import codec
from .._storage.base import Store
from .._storage.keys import record_name
from .._storage.records import StepRecord
from .._storage.storedread import decode_stored, load_stored, stored_bytes
from .._valuetext import preview_of
from ..errors import CorruptRecordError
from .runs import RunInfo


def output_loader(
    store: Store, workflow: str, run_id: str, rec: StepRecord
) -> Callable[[], Any] | None:
    """Reads rec's output when called; None when it kept no value."""
    if not rec.persisted or rec.encoding is None:
        return None
    encoding, name = rec.encoding, f"{workflow}/{run_id}/{record_name(rec.position)}"
    return lambda: load_stored(store, (workflow, run_id), encoding, rec.value, rec.blob,
                               position=rec.position, name=name)  # fmt: skip


def output_preview(store: Store, info: RunInfo, rec: StepRecord) -> tuple[int | None, str | None]:
    if not rec.persisted or rec.encoding is None:
        return None, "(not stored)"
    name = f"{info.workflow}/{info.run_id}/{record_name(rec.position)}"
    try:
        data = stored_bytes(store, (info.workflow, info.run_id), rec.value, rec.blob,
                            position=rec.position, name=name)  # fmt: skip
    except CorruptRecordError as e:
        return None, f"({e.key}: damaged or missing)"
    if data is None:
        return None, "(not stored)"
    pickled = rec.encoding in (codec.PICKLE, codec.PICKLE_OOB)
    if pickled and not store.allow_pickle:  # refused on purpose: nothing is wrong with it
        return len(data), f"<pickled value, {len(data)} bytes: {NOT_LOADED}>"
    try:
        value = decode_stored(store, rec.encoding, data, name=name)
    except Exception as e:
        kind = "pickled value" if pickled else "value"
        return len(data), f"<{kind}, {len(data)} bytes: not decoded here ({type(e).__name__})>"
    return len(data), preview_of(value)


NOT_LOADED = "not loaded under allow_pickle=False (--no-pickle)"
