"""Where the step cache lives in a store, and how an entry is read and written.

```
cache/entries/<step>/<fingerprint>.<argument digest>   one sealed entry (a StepRecord)
cache/shared/blobs/<sha256>                            values over the blob threshold
cache/used/<step>/<fingerprint>.<argument digest>      when a hit last used the entry
cache/refs/<sha256>/<workflow>/<run id>.ref            a run whose record points at a blob
```

An entry is written create-only, so two processes that computed one key at
once keep one value. It is sealed like a run's records (checksum, or HMAC
with the store's signing key) and its value decoded under the store's
`allow_pickle`. Small values sit in the entry; a run served from the cache
copies them into its record. Large ones are a blob that the run's record
points at (`Store.get_blob` finds it here), so the run leaves a ref marker,
and pruning the cache keeps every blob a run still refers to."""

from __future__ import annotations

import functools
import hashlib
import os
import string
import urllib.parse
from collections.abc import Callable
from typing import Any

from .._frozen import Compared, dataclass
from ..errors import CorruptRecordError, DurableError, IntegrityError
from . import cacheblob
from .base import SHARED_BLOBS, Store
from .clock import now
from .local import LocalStore
from .localfs import Identity, current, read
from .records import StepRecord, encode_record, keep_encoded, seal, unseal
from .storedread import decode_stored

AREA = "cache/"
ENTRIES = AREA + "entries/"
USED = AREA + "used/"
REFS = AREA + "refs/"
BLOBS = cacheblob.BLOBS
KIND = "cache"
CRC = cacheblob.CRC
_SAFE = frozenset(string.ascii_letters + string.digits + "_-.<>(),=+@")
_MAX_STEP = 150


def step_part(name: str) -> str:
    """A step name as one key part: other characters (and a leading dot)
    are %-escaped, so that the mapping is one-to-one; a long name is cut and
    ends with a digest of the whole."""
    out = "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name)
    if out.startswith("."):
        out = "%2E" + out[1:]
    if len(out) > _MAX_STEP:
        out = out[:_MAX_STEP] + "%~" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return out or "%"


def entry_key(name: str, fingerprint: str, digest: str) -> str:
    return f"{ENTRIES}{_step_part(name)}/{fingerprint}.{digest}"


_step_part = functools.lru_cache(maxsize=1024)(step_part)  # a hit names its folder


def used_key(key: str) -> str:
    return USED + key[len(ENTRIES) :]


def ref_key(sha: str, workflow: str, run_id: str) -> str:
    return f"{REFS}{sha}/{workflow}/{run_id}.ref"


@dataclass
class Entry(Compared):
    """A cache entry: its key and the record it keeps."""

    key: str
    record: StepRecord

    @property
    def created(self) -> float:
        return float(self.record.extra.get("created", self.record.ended))

    @property
    def size(self) -> int:
        return int(self.record.extra.get("size", 0))


def read_entry(store: Store, key: str, raw: bytes | None = None) -> Entry | None:
    """The entry at key; None when there is none or it is damaged (a damaged
    entry is only a miss: the call recomputes it). An entry that is not
    signed with this store's key raises `IntegrityError`."""
    seen = _checked.get(key)
    if seen is not None and (seen[0] is not store or seen[2] != store.signing_key):
        seen = None
    ident: Identity | None = None
    if raw is None and type(store) is LocalStore:
        path = store.root + os.sep + key
        if seen is not None and seen[4] is not None and current(path, exact=True) == seen[4]:
            return seen[3]  # the very file checked before: one `lstat`, no read
        raw, ident = _read_local(store, key, path)
    elif raw is None:
        raw = store.get(key)
    if raw is None:
        return None
    # The same bytes, checked with the same key, by the same store: the
    # same outcome (unsealing and parsing are pure), so only the comparison
    # of every byte is repeated.
    if seen is not None and seen[1] == raw:
        entry: Entry | None = seen[3]
    else:
        entry = _checked_entry(store, key, raw)
    if entry is not None:
        _remember(store, key, raw, entry, ident)
    return entry


def _read_local(store: LocalStore, key: str, path: str) -> tuple[bytes | None, Identity | None]:
    # Straight from the file, with its identity: an entry key is a relative
    # path of safe parts (`entry_key`), so `os.path.join`'s checks have
    # nothing to do. An entry is written once and never changed in place
    # (its use time is a file of its own), so a file of the same identity
    # holds the same bytes; whatever else stood at this key would be an
    # entry of the same call, checked as it is read. `get` raises the error.
    try:
        got = read(path, exact=True)  # with the change time: a rewrite moves it
    except OSError:
        return store.get(key), None
    return (None, None) if got is None else got


# entry key -> (store, the entry's bytes, the signing key, the entry they
# gave, the identity of the local file they were read from)
_checked: dict[str, tuple[Store, bytes, bytes | None, Entry, Identity | None]] = {}
_CHECKED_MAX, _CHECKED_BYTES = 1024, 64 * 1024


def _remember(
    store: Store, key: str, raw: bytes, entry: Entry, ident: Identity | None = None
) -> None:
    if len(raw) <= _CHECKED_BYTES:
        if len(_checked) >= _CHECKED_MAX:
            _checked.clear()
        _checked[key] = (store, raw, store.signing_key, entry, ident)


_RUN = "(cache)"  # what `unseal` names as the run an object belongs to


def _checked_entry(store: Store, key: str, raw: bytes) -> Entry | None:
    try:
        body = unseal(raw, store.signing_key, run_id=_RUN, position=None, name=key)
        record = StepRecord.from_bytes(body)
    except IntegrityError as e:
        # An entry belongs to no run: named as what it is, its way out last.
        text = str(e.args[0] if e.args else e).replace(f"run {_RUN!r}: ", "cache entry ", 1)
        e.args = (f"{text.rstrip('.')}. Remove it with `durable cache clear`.",)
        raise
    except (CorruptRecordError, ValueError, TypeError):
        return None
    return Entry(key, record) if record.kind == KIND else None


MISSING: Any = object()


def entry_value(store: Store, entry: Entry) -> Any:
    """The value an entry holds, or MISSING when its blob is gone or damaged
    (pruned meanwhile: a miss). Decoded under the store's `allow_pickle`."""
    rec = entry.record
    data = rec.value if rec.blob is None else cacheblob.blob_body(store, rec)
    if rec.encoding is None or data is None:
        return MISSING
    try:
        return decode_stored(store, rec.encoding, data, name=entry.key)
    except DurableError:  # a pickle refused by allow_pickle=False says so
        raise
    except Exception:  # its class renamed or changed since: it cannot serve
        return MISSING


def is_missing(value: Any) -> bool:
    return value is MISSING


def encode(
    store: Store, record: StepRecord, value: Any, claim: Callable[[str], None] | None = None
) -> None:
    """Fill record's encoding and value, or blob (in the shared area; told
    to `claim` before it is written). A blob's sums per chunk go in the
    entry (see `cacheblob.blob_body`)."""
    data = encode_record(store, record, value, out_of_band=True)
    record.value, record.blob = keep_encoded(store, SHARED_BLOBS, data, claim)
    record.extra["size"] = len(data)
    if record.blob is not None:
        record.extra[cacheblob.SUMS] = cacheblob.chunk_sums(data, store.signing_key is not None)


def write_entry(store: Store, key: str, record: StepRecord) -> bool:
    """Create-only; False when another writer's entry is there already."""
    record.extra.setdefault("created", now())
    body = record.to_bytes()
    raw = seal(body, store.signing_key)
    if not store.create(key, raw):
        return False
    # What this process wrote is what its next hit reads (a copy: the
    # caller's record is its own).
    _remember(store, key, raw, Entry(key, StepRecord.from_bytes(body)))
    return True


def remove(store: Store, keys: list[str]) -> None:
    """Forget entries (their use markers too); blobs go in `cachescan.sweep`."""
    store.delete([*keys, *(used_key(k) for k in keys)])


def entry_parts(key: str) -> tuple[str, str, str]:
    """(step, fingerprint, argument digest) as an entry's key spells them:
    for an entry that cannot be read. The step is its folder's name, %-escapes
    undone (a long name keeps its cut and digest)."""
    folder, _, name = key[len(ENTRIES) :].rpartition("/")
    fingerprint, _, digest = name.partition(".")
    return urllib.parse.unquote(folder), fingerprint, digest
