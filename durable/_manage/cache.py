"""Looking at and cleaning the step cache: `durable cache ls|clear|prune`.

Removing entries never removes a blob that a run still refers to (a run
served from the cache points at the cache's copy of a large value): blobs
are swept only when no entry and no existing run refers to them. Removing a
run never touches the cache."""

from __future__ import annotations

import os

from .._calls import at_callers
from .._frozen import Frozen, dataclass
from .._storage import cachemarks, cachescan, cachestore
from .._storage.base import Store
from .._storage.cachestore import Entry
from .._storage.cacheuse import counts
from .._storage.clock import now
from .._storage.factory import default_store, open_store
from ..errors import ConfigurationError


@dataclass(frozen=True)
class EntryInfo(Frozen):
    """One cache entry as `durable cache ls` shows it."""

    step: str
    fingerprint: str
    digest: str
    size: int  # bytes of the encoded value
    created: float
    used: float  # last use: the latest hit's marker, else the creation
    key: str
    # False for an entry that fails the signature check under the store's key
    # (another key, or forged): never served; its size and times are unknown (0).
    verified: bool = True


@dataclass(frozen=True)
class CacheInfo(Frozen):
    """`durable.cache_info(step)`: hits and misses in this process, and the
    entries the store holds for the step (with their size in bytes)."""

    step: str
    hits: int
    misses: int
    entries: int
    size: int


@at_callers
def cache_info(step: object, *, store: Store | str | os.PathLike[str] | None = None) -> CacheInfo:
    """Hits and misses of a cached step in this process, and the number and
    total size of its entries in the store (default: where a plain call of
    the step caches)."""
    name = step if isinstance(step, str) else getattr(step, "name", None)
    if not isinstance(name, str):
        raise ConfigurationError(f"cache_info() takes a step or a step name, not {step!r}")
    where = store if isinstance(store, Store) else (open_store(store) if store else default_store())
    entries = cachescan.all_entries(where, name)
    # A step (not a name) counts its own: `f` of another module is another step.
    # (Read off its spec by name: run management never loads the engine.)
    mine = None if isinstance(step, str) else getattr(step, "__durable_step__", None)
    owner = getattr(mine, "owner", (None, None))[1]
    if isinstance(owner, str):  # an entry written before its owner was kept: can't be told
        entries = [e for e in entries if e.record.extra.get("of", owner) == owner]
    hits, misses = counts(name, owner if isinstance(owner, str) else None)
    return CacheInfo(name, hits, misses, len(entries), sum(e.size for e in entries))


def list_entries(store: Store, step: str | None = None) -> list[EntryInfo]:
    """Entries (of one step), most recently used first; those that fail the
    signature check last (`EntryInfo.verified` False)."""
    entries, unverified = cachescan.scan_entries(store, step)
    used = cachemarks.last_used(store, entries)
    infos = [_info(e, used[e.key]) for e in entries]
    infos.sort(key=lambda i: (-i.used, i.step, i.key))
    return infos + sorted((_unverified(u) for u in unverified), key=lambda i: i.key)


def _info(entry: Entry, used: float) -> EntryInfo:
    rec = entry.record
    digest = rec.args_digest or ""
    return EntryInfo(rec.name, rec.fingerprint, digest, entry.size, entry.created, used, entry.key)


def _unverified(u: cachescan.Unverified) -> EntryInfo:
    # Nothing of its content is trusted: what its key says only.
    step, fingerprint, digest = cachestore.entry_parts(u.key)
    return EntryInfo(step, fingerprint, digest, 0, 0.0, 0.0, u.key, verified=False)


def clear(store: Store, step: str | None = None) -> tuple[list[EntryInfo], int]:
    """Remove every entry (of one step), those that fail the signature check
    under the store's key included (what their `IntegrityError` recommends);
    the entries and the number of blobs that went with them."""
    gone = list_entries(store, step)
    if step is not None:
        # Entries that cannot be read (damaged) are listed under the step's folder too.
        keys = store.list(f"{cachestore.ENTRIES}{cachestore.step_part(step)}/")
    else:
        keys = store.list(cachestore.ENTRIES)
    cachestore.remove(store, keys)
    return gone, cachescan.sweep(store)


def prune(
    store: Store,
    *,
    older_than: float | None = None,
    max_size: int | None = None,
    dry_run: bool = False,
) -> tuple[list[EntryInfo], int, list[EntryInfo]]:
    """Remove entries not used for `older_than` seconds, then the least
    recently used ones until the rest fit in `max_size` bytes. Returns the
    entries removed (or that would be), the number of blobs deleted, and
    the entries left alone because they fail the signature check (their age
    and size cannot be trusted, and a prune run without the right key must
    not empty the cache: `clear` removes them)."""
    if older_than is None and max_size is None:
        raise ConfigurationError("prune needs --older-than AGE, --max-size SIZE or both")
    if (older_than is not None and older_than < 0) or (max_size is not None and max_size < 0):
        raise ConfigurationError("--older-than and --max-size must not be negative")
    listed = list_entries(store)  # most recently used first
    entries = [e for e in listed if e.verified]
    skipped = [e for e in listed if not e.verified]
    cutoff = now() - older_than if older_than is not None else None
    keep = [e for e in entries if cutoff is None or e.used >= cutoff]
    gone = [e for e in entries if cutoff is not None and e.used < cutoff]
    if max_size is not None:
        total = sum(e.size for e in keep)
        while keep and total > max_size:
            last = keep.pop()  # the least recently used of those left
            total -= last.size
            gone.append(last)
    if dry_run:
        return gone, 0, skipped
    cachestore.remove(store, [e.key for e in gone])
    return gone, cachescan.sweep(store), skipped


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """`10GB`, `500MB`, `1.5GiB`, `2048` (bytes)."""
    t = text.strip().lower().replace(" ", "")
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(digits) :]
    try:
        number = float(digits)
    except ValueError:
        number = -1.0
    if unit not in _SIZE_UNITS or number < 0:
        raise ValueError(f"{text!r} is not a size like 500MB, 10GB or 2GiB")
    return int(number * _SIZE_UNITS[unit])


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1000
    return f"{size:.1f}TB"
