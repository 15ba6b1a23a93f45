"""A value a record or manifest refers to, read back: inline or from its
blob (checked against the digest the record names), then decoded in THE
one place the store's `allow_pickle` is applied (`decode_stored`); a
pickle that no longer rebuilds is said as such, with the ways on."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from .._errortext import shell_words
from ..errors import CorruptRecordError, DurableError
from .codec import MSGPACK, decode_value, unpack
from .envelope import sealed_body, unseal
from .keys import Position, blob_name, top_level

if TYPE_CHECKING:
    from .base import Store


def check_blob(
    raw: bytes, digest: str, *, run_id: str, position: Position | None, name: str
) -> None:
    """A blob must hash to the digest its (verified) record names."""
    if hashlib.sha256(raw).hexdigest() != digest:
        why = f"blob {digest[:12]} does not match its digest (damaged or replaced)"
        raise CorruptRecordError(run_id, position, name, why)


def stored_bytes(
    store: Store,
    where: tuple[str, str],
    inline: bytes | None,
    blob: str | None,
    *,
    position: Position | None,
    name: str,
) -> bytes | memoryview | None:
    """The encoded value a (verified) record or manifest refers to: inline,
    or its blob (`where` is workflow, run id) checked against the digest the
    record names, which covers every byte of the envelope: its body is not
    hashed a second time nor copied (300 MB: 1.5 s of `durable show`'s 7)."""
    if blob is None:
        return inline
    raw = store.get_blob(*where, blob)
    if raw is None:
        raise CorruptRecordError(where[1], position, blob_name(blob), "blob missing")
    check_blob(raw, blob, run_id=where[1], position=position, name=name)
    try:
        return sealed_body(raw)
    except ValueError:  # not an envelope of ours: `unseal` says why
        return unseal(raw, store.signing_key, run_id=where[1], position=position, name=name)


UNLOADABLE = (  # a pickle names the classes and functions it was made of, and calls them
    "A pickled value is rebuilt from the classes it names: one renamed, moved or "
    "changed since (its __init__, __reduce__ or __setstate__) cannot rebuild it. Put "
    "the class back as it was to resume; start afresh with restart=True (durable run "
    "--restart)"
)


def decode_stored(store: Store, encoding: str, data: bytes | memoryview, *, name: str) -> Any:
    """THE place a value read from a store is decoded: step and item
    records, blobs, a manifest's arguments and result, fork sources and
    history previews all come here, so the store's `allow_pickle` (and
    `DURABLE_ALLOW_PICKLE`) holds for every reader. Signatures were checked
    when the record, manifest or blob holding `data` was unsealed."""
    if encoding == MSGPACK:  # plain data: no policy applies, the replay fast path
        return unpack(data)
    return decode_value(encoding, data, allow_pickle=store.allow_pickle, key=name)


def load_stored(
    store: Store,
    where: tuple[str, str],
    encoding: str,
    inline: bytes | None,
    blob: str | None,
    *,
    position: Position | None,
    name: str,
) -> Any:
    """`stored_bytes`, then `decode_stored`."""
    data = stored_bytes(store, where, inline, blob, position=position, name=name)
    if data is None:
        raise CorruptRecordError(where[1], position, name, "it holds no value")
    try:
        return decode_stored(store, encoding, data, name=name)
    except DurableError:
        raise
    except Exception as e:  # intact (checked above), yet its pickle cannot be rebuilt
        why = f"its value was recorded, but loading it raised {type(e).__name__}: {e}"
        advice = UNLOADABLE + (
            "" if position is None else "; or run it again in a copy of the run: `durable "
            f"{shell_words('fork', where[1], '--workflow', where[0], '--at', top_level(position))}`"
        )
        raise CorruptRecordError(where[1], position, name, why, advice=advice, unloadable=True) from e
