"""The step cache as a whole (`durable cache ls`, `clear`, `prune`): every
entry read in one listing, those failing the signature check kept apart
(never served, only shown and removed), and the sweep of the blobs that no
entry and no existing run refers to."""

from __future__ import annotations

from .._frozen import Compared, dataclass
from ..errors import CorruptRecordError, IntegrityError
from .base import Store
from .cachestore import BLOBS, ENTRIES, REFS, Entry, read_entry, step_part
from .records import StepRecord, intact_body, sealed_body


def sweep(store: Store) -> int:
    """Delete the blobs that no entry and no existing run refers to, and the
    ref markers of runs that are gone; the number of blobs deleted. Blobs are
    listed first, so that one written after that listing is never a
    candidate; a run that comes to refer to a blob while it is swept finds
    its entry removed once its reference is written, and keeps a copy of
    its own (`_core.cache`). A
    blob that an entry failing the signature check names is kept too (that
    entry may be good under another key: keeping a blob harms nothing)."""
    blobs = {k[len(BLOBS) :] for k in store.list(BLOBS)}
    entries, unverified = scan_entries(store)
    keep = {e.record.blob for e in entries if e.record.blob is not None}
    keep.update(u.blob for u in unverified if u.blob is not None)
    stale: list[str] = []
    runs: dict[tuple[str, str], bool] = {}
    for ref in store.list(REFS):
        sha, workflow, run = ref[len(REFS) :].removesuffix(".ref").split("/", 2)
        if (workflow, run) not in runs:
            runs[workflow, run] = store.load_manifest(workflow, run) is not None
        if runs[workflow, run]:
            keep.add(sha)
        else:
            stale.append(ref)
    gone = sorted(blobs - keep)
    store.delete([*stale, *(BLOBS + sha for sha in gone)])
    return len(gone)


@dataclass
class Unverified(Compared):
    """An entry that fails the signature check under the store's key (signed
    with another key, not signed while the store has one, or forged). It is
    never served (a cached call that meets it raises `IntegrityError`);
    `durable cache ls` shows it, `clear` removes it."""

    key: str
    why: str  # the IntegrityError's message
    blob: str | None  # the blob its unchecked body names: only ever kept, never read


def all_entries(store: Store, step: str | None = None) -> list[Entry]:
    """Every readable entry (of one step): one listing, one batched read.
    Entries that fail the signature check are left out (`scan_entries`)."""
    return scan_entries(store, step)[0]


def scan_entries(store: Store, step: str | None = None) -> tuple[list[Entry], list[Unverified]]:
    """The readable entries (of one step), and those that fail the signature
    check; a damaged entry is in neither (it is a miss)."""
    prefix = ENTRIES if step is None else f"{ENTRIES}{step_part(step)}/"
    keys = store.list(prefix)
    entries: list[Entry] = []
    unverified: list[Unverified] = []
    for key, raw in store.get_many(keys).items():
        try:
            entry = read_entry(store, key, raw)
        except IntegrityError as e:
            unverified.append(Unverified(key, str(e), _named_blob(raw)))
            continue
        if entry is not None and (step is None or entry.record.name == step):
            entries.append(entry)
    return entries, unverified


def _named_blob(raw: bytes) -> str | None:
    """The blob an entry that failed the signature check names, read from
    its body without the check: only so that `sweep` keeps that blob."""
    try:
        body = intact_body(raw, None)
        record = StepRecord.from_bytes(body if body is not None else bytes(sealed_body(raw)))
    except (CorruptRecordError, ValueError, TypeError):
        return None
    return record.blob if isinstance(record.blob, str) else None
