"""The marks of a cache entry's use (`cache/used/`): when a hit last read
it, which `durable cache prune` removes the least recent of first."""

from __future__ import annotations

from .._errortext import warn
from ..errors import StorageError
from . import codec
from .base import Store
from .cachestore import Entry, used_key
from .clock import now


def last_used(store: Store, entries: list[Entry]) -> dict[str, float]:
    """key -> when it was last used: its use marker, else its creation."""
    markers = store.get_many([used_key(e.key) for e in entries])
    out = {}
    for e in entries:
        raw = markers.get(used_key(e.key))
        try:
            used = float(codec.unpack(raw)) if raw is not None else 0.0
        except (ValueError, TypeError):
            used = 0.0  # a damaged marker: the entry counts from its creation
        out[e.key] = max(used, e.created)
    return out


def touch(store: Store, key: str) -> None:
    """Mark an entry used now, for prune's order. A store that refuses the
    marker (a cache shared read-only: a team mate's under umask 027, a
    read-only mount) still serves the hit it read, with a warning, once
    per store and process: the marker orders a prune, it is no value."""
    try:
        store.put(used_key(key), codec.pack(now()))
    except StorageError as e:
        refused(store, e, "could not mark cache entries used in {url} ({error}); the hits are "
                "served, but `durable cache prune` may take them for unused")  # fmt: skip


def refused(store: Store, error: StorageError, message: str) -> None:
    """Warn, once per store, process and message, that the cache could not
    be written (`message` names `{url}` and `{error}`): what it serves, or
    what a call computed, is returned all the same (docs/caching.md)."""
    if (store.url, message) not in _told:
        _told.add((store.url, message))
        warn(message.format(url=store.url, error=error))


_told: set[tuple[str, str]] = set()  # (store, message) warned once
